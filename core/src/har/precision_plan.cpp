#include "llm2hef/core/har/precision_plan.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "fixups/fixup_common.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::core::har {

namespace fs = std::filesystem;

const std::vector<std::string>& known_precision_modes() {
  // a8_w8, a8_w4, a16_w16: hailo_model_zoo cfg/alls/generic; a16_w8 and
  // a16_w8_a16: hailo_model_zoo cfg/alls/hailo15l; a16_w4_a16: Hailo's own
  // Qwen2-1.5B-Instruct script (down_proj), as LNM's recipes/ reproduces it.
  static const std::vector<std::string> modes = {"a8_w8", "a8_w4", "a16_w16", "a16_w8", "a16_w8_a16", "a16_w4_a16"};
  return modes;
}

namespace {

bool is_known_mode(const std::string& m) {
  const auto& k = known_precision_modes();
  return std::find(k.begin(), k.end(), m) != k.end();
}

std::string check_mode(const std::string& where, const nlohmann::json& v) {
  if (!v.is_string())
    throw BadInput(where + ": expected a precision mode string (" + join(known_precision_modes()) + "), got " +
                   v.dump());
  const std::string m = v.get<std::string>();
  if (!is_known_mode(m))
    throw BadInput(where + ": '" + m + "' is not a precision mode Hailo documents for quantization_param (" +
                   join(known_precision_modes()) + "; docs/quantization-gate.md)");
  return m;
}

// How many leading '/'-separated components two names share: an ONNX node
// path differs from its intended target mostly in its last components.
size_t shared_components(const std::string& a, const std::string& b) {
  size_t n = 0, i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) {
    if (a[i] == '/') ++n;
    ++i;
  }
  if ((i == a.size() || a[i] == '/') && (i == b.size() || b[i] == '/')) ++n;
  return n;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The few original names nearest to `wanted`: those sharing the most
// leading path components, then by edit distance (computed on at most a few
// hundred candidates, so a 64,000-layer HN stays fast).
std::vector<std::string> closest(const std::string& wanted, const std::vector<std::string>& names, size_t count) {
  size_t best = 0;
  for (const auto& n : names) best = std::max(best, shared_components(wanted, n));
  std::vector<std::string> pool;
  for (const auto& n : names)
    if (shared_components(wanted, n) == best && pool.size() < 400) pool.push_back(n);
  std::vector<std::pair<size_t, std::string>> scored;
  for (auto& n : pool) scored.emplace_back(edit_distance(wanted, n), n);
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < count; ++i) out.push_back(scored[i].second);
  return out;
}

}  // namespace

PrecisionPlan read_precision_plan(const fs::path& path) {
  // calibrate may keep per-tensor statistics next to the plan; they are
  // ignored here but the file can be large.
  const nlohmann::json doc =
      sdk::read_json(path, sdk::JsonLimits::with_max_bytes(std::size_t{256} << 20, "quantization.json"));
  PrecisionPlan plan;
  plan.origin = path.string();
  const std::string& f = plan.origin;
  if (!doc.is_object()) throw BadInput(f + ": expected a JSON object with 'version' and 'plan'");
  if (!doc.contains("version") || !doc["version"].is_number_integer())
    throw BadInput(f + ": field 'version': expected the integer 1");
  if (doc["version"].get<int64_t>() != 1)
    throw BadInput(f + ": field 'version': " + doc["version"].dump() +
                   " is not a version this llm2hef reads (1); update llm2hef or re-run `llm2hef calibrate`");
  if (!doc.contains("plan") || !doc["plan"].is_object())
    throw BadInput(f + ": field 'plan': expected an object with 'lines' and 'default_mode'");
  const nlohmann::json& p = doc["plan"];
  if (p.contains("default_mode") && !p["default_mode"].is_null())
    plan.default_mode = check_mode(f + ": field 'plan.default_mode'", p["default_mode"]);
  if (!p.contains("lines") || !p["lines"].is_array())
    throw BadInput(f + ": field 'plan.lines': expected a list of {onnx_node, precision_mode, reason}");
  for (size_t i = 0; i < p["lines"].size(); ++i) {
    const nlohmann::json& e = p["lines"][i];
    const std::string where = f + ": field 'plan.lines[" + std::to_string(i) + "]";
    if (!e.is_object()) throw BadInput(where + "': expected an object, got " + e.dump());
    PlanEntry entry;
    entry.index = i;
    if (!e.contains("onnx_node") || !e["onnx_node"].is_string() || e["onnx_node"].get<std::string>().empty())
      throw BadInput(where + ".onnx_node': expected the name of a node of model.onnx");
    entry.onnx_node = e["onnx_node"].get<std::string>();
    if (!e.contains("precision_mode")) throw BadInput(where + ".precision_mode': missing");
    entry.precision_mode = check_mode(where + ".precision_mode'", e["precision_mode"]);
    if (e.contains("reason") && !e["reason"].is_null()) {
      if (!e["reason"].is_string()) throw BadInput(where + ".reason': expected a string");
      entry.reason = e["reason"].get<std::string>();
    }
    plan.entries.push_back(std::move(entry));
  }
  if (doc.contains("model") && doc["model"].is_string()) plan.model = doc["model"].get<std::string>();
  if (doc.contains("budget") && !doc["budget"].is_null()) {
    const nlohmann::json& b = doc["budget"];
    if (!b.is_object())
      throw BadInput(f + ": field 'budget': expected an object with extra_weight_bytes and extra_activation_bytes");
    const auto bytes = [&](const char* key) -> int64_t {
      const std::string where = f + ": field 'budget." + key + "'";
      if (!b.contains(key)) throw BadInput(where + ": missing (re-run `llm2hef calibrate`)");
      const nlohmann::json& v = b[key];
      const bool whole = v.is_number_integer();
      const bool in_range = v.is_number_unsigned()
                                ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                                : whole && v.get<int64_t>() >= 0;
      if (!whole || !in_range) throw BadInput(where + ": expected a whole, non-negative byte count, got " + v.dump());
      return v.get<int64_t>();
    };
    plan.cost = PlanCost{bytes("extra_weight_bytes"), bytes("extra_activation_bytes"), bytes("weight_bytes_default")};
  }
  return plan;
}

std::vector<MappedEntry> map_plan_to_layers(const PrecisionPlan& plan, const HnModel& hn) {
  std::unordered_map<std::string, std::vector<std::string>> by_node;  // original name -> layers
  std::vector<std::string> all_names;
  for (const auto& layer : hn.layer_names()) {
    const auto& l = hn.layer(layer);
    if (!l.contains("original_names") || !l["original_names"].is_array()) continue;
    for (const auto& o : l["original_names"]) {
      if (!o.is_string()) continue;
      auto& list = by_node[o.get<std::string>()];
      if (list.empty()) all_names.push_back(o.get<std::string>());
      list.push_back(layer);
    }
  }
  std::vector<MappedEntry> out;
  std::vector<std::string> unmapped;
  for (const auto& e : plan.entries) {
    auto it = by_node.find(e.onnx_node);
    if (it != by_node.end()) {
      out.push_back({&e, it->second});
      continue;
    }
    std::string near;
    for (const auto& c : closest(e.onnx_node, all_names, 3))
      near += std::string(near.empty() ? "" : ", ") + "'" + c + "' (" + join(by_node[c]) + ")";
    unmapped.push_back(
        "plan.lines[" + std::to_string(e.index) + "] '" + e.onnx_node + "' (" + e.precision_mode +
        "): no layer lists it in original_names" +
        (near.empty() ? std::string("; the HN records no original_names at all") : "; closest: " + near));
  }
  if (!unmapped.empty())
    throw BadInput(plan.origin + ": " + std::to_string(unmapped.size()) + " plan entr" +
                   (unmapped.size() == 1 ? "y maps" : "ies map") + " to no layer of " + hn.label() + ":\n  " +
                   join(unmapped, "\n  ") +
                   "\n(was the plan made for this export? Re-run `llm2hef calibrate` on the export this HAR was "
                   "parsed from)");
  // One layer, one mode: the DFC would apply whichever line it reads last.
  std::map<std::string, const PlanEntry*> owner;
  std::vector<std::string> conflicts;
  for (const auto& m : out)
    for (const auto& layer : m.layers) {
      auto [it, fresh] = owner.emplace(layer, m.entry);
      if (!fresh && it->second->precision_mode != m.entry->precision_mode)
        conflicts.push_back(layer + ": plan.lines[" + std::to_string(it->second->index) + "] '" +
                            it->second->onnx_node + "' says " + it->second->precision_mode + ", plan.lines[" +
                            std::to_string(m.entry->index) + "] '" + m.entry->onnx_node + "' says " +
                            m.entry->precision_mode);
    }
  if (!conflicts.empty())
    throw BadInput(plan.origin + ": plan entries give one HN layer two precision modes:\n  " + join(conflicts, "\n  "));
  return out;
}

}  // namespace llm2hef::core::har
