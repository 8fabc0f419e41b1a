#include "llm2hef/core/har/precision_plan.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <unordered_map>

#include "fixups/fixup_common.hpp"
#include "llm2hef/core/io/terminal_text.hpp"
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

bool has_4bit_weights(const std::string& mode) { return mode == "a8_w4" || mode == "a16_w4_a16"; }

namespace {

// The layer types each mode is seen on (docs/quantization-gate.md, the
// "Precision modes" table); input_layer is handled apart.
const std::map<std::string, std::vector<std::string>>& mode_types() {
  static const std::map<std::string, std::vector<std::string>> types = {
      {"a8_w8", {"conv"}},
      {"a8_w4", {"conv"}},
      {"a16_w16", {"conv", "ew_add", "ew_mult", "normalization"}},
      {"a16_w8", {"conv", "ew_add", "normalization", "reduce_sum"}},
      {"a16_w8_a16", {"conv", "ew_add", "normalization"}},
      {"a16_w4_a16", {"conv"}},
  };
  return types;
}

// What a value of the wrong kind was, in a few bytes: a number as it is
// written, anything else by its JSON type (a string or object may be
// megabytes, and hostile).
std::string describe(const nlohmann::json& v) {
  return v.is_number() || v.is_boolean() ? v.dump() : std::string("a JSON ") + v.type_name();
}

bool is_known_mode(const std::string& m) {
  const auto& k = known_precision_modes();
  return std::find(k.begin(), k.end(), m) != k.end();
}

std::string check_mode(const std::string& where, const nlohmann::json& v) {
  if (!v.is_string())
    throw BadInput(where + ": expected a precision mode string (" + join(known_precision_modes()) + "), got " +
                   describe(v));
  const std::string m = v.get<std::string>();
  if (!is_known_mode(m))
    throw BadInput(where + ": '" + printable(m) + "' is not a precision mode Hailo documents for quantization_param (" +
                   join(known_precision_modes()) + "; docs/quantization-gate.md)");
  return m;
}

// A whole, non-negative byte count that fits in int64; BadInput otherwise.
int64_t byte_count(const std::string& where, const nlohmann::json& v) {
  const bool in_range = v.is_number_unsigned()
                            ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                            : v.is_number_integer() && v.get<int64_t>() >= 0;
  if (!in_range) throw BadInput(where + ": expected a whole, non-negative byte count below 2^63, got " + describe(v));
  return v.get<int64_t>();
}

// The statistics calibrate writes beside the plan: checked as JSON, never
// built (they are most of the file).
const sdk::JsonPaths& unread_keys() {
  static const sdk::JsonPaths keys = {{"ranges"},     {"weights"},          {"weight_sensitivity"},
                                      {"simulation"}, {"plan_over_budget"}, {"rule"},
                                      {"timing"}};
  return keys;
}

PrecisionPlan plan_from_json(const nlohmann::json& doc, const std::string& origin) {
  PrecisionPlan plan;
  plan.origin = origin;
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
  int64_t lines_extra = 0;
  for (size_t i = 0; i < p["lines"].size(); ++i) {
    const nlohmann::json& e = p["lines"][i];
    const std::string where = f + ": field 'plan.lines[" + std::to_string(i) + "]";
    if (!e.is_object()) throw BadInput(where + "': expected an object, got " + describe(e));
    PlanEntry entry;
    entry.index = i;
    if (!e.contains("onnx_node") || !e["onnx_node"].is_string() || e["onnx_node"].get<std::string>().empty())
      throw BadInput(where + ".onnx_node': expected the name of a node of model.onnx");
    entry.onnx_node = e["onnx_node"].get<std::string>();
    if (entry.onnx_node.size() > kMaxPlanNameBytes)
      throw BadInput(where + ".onnx_node': " + std::to_string(entry.onnx_node.size()) + " bytes, over the limit of " +
                     std::to_string(kMaxPlanNameBytes) + " for a node name (llm2hef's are under 100)");
    if (!e.contains("precision_mode")) throw BadInput(where + ".precision_mode': missing");
    entry.precision_mode = check_mode(where + ".precision_mode'", e["precision_mode"]);
    if (e.contains("reason") && !e["reason"].is_null()) {
      if (!e["reason"].is_string()) throw BadInput(where + ".reason': expected a string");
      entry.reason = e["reason"].get<std::string>();
    }
    if (e.contains("weight_group_size") && !e["weight_group_size"].is_null()) {
      const nlohmann::json& g = e["weight_group_size"];
      const std::string label = where + ".weight_group_size' ('" + printable(entry.onnx_node) + "')";
      if (!g.is_number_integer() || g.get<int64_t>() != kWeightGroupSize)
        throw BadInput(label + ": expected " + std::to_string(kWeightGroupSize) +
                       ", the one group size a public Hailo-10H script writes (docs/quantization-gate.md), got " +
                       describe(g));
      if (!has_4bit_weights(entry.precision_mode))
        throw BadInput(label +
                       ": group-wise weight scales are for 4-bit weights (a8_w4, a16_w4_a16), as Hailo's "
                       "script gives them; this entry's precision_mode is " +
                       entry.precision_mode + " (remove weight_group_size, or change the mode)");
      entry.weight_group_size = kWeightGroupSize;
    }
    if (e.contains("extra_bytes") && !e["extra_bytes"].is_null()) {
      entry.extra_bytes = byte_count(where + ".extra_bytes'", e["extra_bytes"]);
      if (__builtin_add_overflow(lines_extra, entry.extra_bytes, &lines_extra))
        throw BadInput(where + ".extra_bytes': the lines' extra_bytes add up past 2^63 bytes");
    }
    plan.entries.push_back(std::move(entry));
  }
  if (doc.contains("model") && !doc["model"].is_null()) {
    if (!doc["model"].is_string()) throw BadInput(f + ": field 'model': expected the name of the export, a string");
    plan.model = doc["model"].get<std::string>();
  }
  // The cache the export calibrate measured had: the activation costs it
  // counted grow with it, so a plan is judged against the same cache only.
  if (doc.contains("calibration") && doc["calibration"].is_object() && doc["calibration"].contains("cache_size")) {
    const nlohmann::json& c = doc["calibration"]["cache_size"];
    if (!c.is_number_integer() || c.get<int64_t>() < 1)
      throw BadInput(f + ": field 'calibration.cache_size': expected a positive integer, got " + describe(c));
    plan.cache_size = c.get<int64_t>();
  }
  if (doc.contains("budget") && !doc["budget"].is_null()) {
    const nlohmann::json& b = doc["budget"];
    if (!b.is_object())
      throw BadInput(f + ": field 'budget': expected an object with extra_weight_bytes and extra_activation_bytes");
    const auto bytes = [&](const char* key) -> int64_t {
      const std::string where = f + ": field 'budget." + key + "'";
      if (!b.contains(key)) throw BadInput(where + ": missing (re-run `llm2hef calibrate`)");
      return byte_count(where, b[key]);
    };
    PlanCost cost{bytes("extra_weight_bytes"), bytes("extra_activation_bytes"), bytes("weight_bytes_default")};
    if (__builtin_add_overflow(cost.extra_weight_bytes, cost.extra_activation_bytes, &cost.extra_bytes))
      throw BadInput(f +
                     ": fields 'budget.extra_weight_bytes' and 'budget.extra_activation_bytes' add up past 2^63 "
                     "bytes");
    plan.cost = cost;
  }
  return plan;
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

// The edit distances computed for one unmapped entry, in cells (|a| x |b|
// each): about 4 M, a few milliseconds, whatever the HN and the names hold.
constexpr uint64_t kClosestCells = uint64_t{1} << 22;

// The few original names nearest to `wanted`: those sharing the most
// leading path components, then by edit distance. Names longer than a plan
// name may be are no suggestion (the plan could not hold them); the edit
// distances stop at kClosestCells, so this is linear in the names' bytes.
std::vector<std::string> closest(const std::string& wanted, const std::vector<std::string>& names, size_t count) {
  size_t best = 0;
  for (const auto& n : names)
    if (n.size() <= kMaxPlanNameBytes) best = std::max(best, shared_components(wanted, n));
  std::vector<std::pair<size_t, const std::string*>> scored;
  uint64_t cells = 0;
  for (const auto& n : names) {
    if (n.size() > kMaxPlanNameBytes || shared_components(wanted, n) != best) continue;
    const uint64_t cost = (wanted.size() + 1) * (n.size() + 1);
    if (!scored.empty() && cells + cost > kClosestCells) break;
    cells += cost;
    scored.emplace_back(edit_distance(wanted, n), &n);
  }
  std::sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : *x.second < *y.second;
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < count; ++i) out.push_back(*scored[i].second);
  return out;
}

// The first kListedProblems of `problems` on their own lines, then how many
// more there are: a plan made for another export must not print megabytes.
std::string listed(const std::vector<std::string>& problems, size_t total) {
  std::string s;
  for (const auto& p : problems) s += "\n  " + p;
  if (total > problems.size()) s += "\n  ... and " + std::to_string(total - problems.size()) + " more";
  return s;
}

std::string entry_label(const PlanEntry& e) {
  return "plan.lines[" + std::to_string(e.index) + "] '" + printable(e.onnx_node) + "'";
}

}  // namespace

bool mode_applies_to(const std::string& mode, const std::string& layer_type, const std::string& layer) {
  if (layer_type == "input_layer") return mode == "a16_w16" && short_name(layer) == "input_layer1";
  const auto it = mode_types().find(mode);
  return it != mode_types().end() && std::find(it->second.begin(), it->second.end(), layer_type) != it->second.end();
}

PrecisionPlan parse_precision_plan(std::string_view text, const std::string& origin) {
  const sdk::JsonLimits limits = sdk::JsonLimits::with_max_bytes(kMaxPlanBytes, "quantization.json");
  if (text.size() > limits.max_bytes) throw BadInput(origin + ": " + limits.too_big(text.size()));
  return plan_from_json(sdk::parse_json_without(text, origin, unread_keys(), limits), origin);
}

PrecisionPlan read_precision_plan(const fs::path& path) {
  // The size is checked on the file before it is read.
  return plan_from_json(sdk::read_json_without(path, unread_keys(),
                                               sdk::JsonLimits::with_max_bytes(kMaxPlanBytes, "quantization.json")),
                        path.string());
}

void check_plan_is_for(const PrecisionPlan& p, const std::string& name, int64_t cache) {
  if (!p.model.empty() && p.model != name)
    throw BadInput(p.origin + ": field 'model': the plan was made for '" + printable(p.model) + "', not for '" +
                   printable(name) + "': run `llm2hef calibrate` on an export of this model");
  if (p.cache_size && *p.cache_size != cache)
    throw BadInput(p.origin + ": field 'calibration.cache_size': the plan was made at cache " +
                   std::to_string(*p.cache_size) + ", not " + std::to_string(cache) +
                   " (its activation costs grow with the cache): use the cache it was made at (--cache " +
                   std::to_string(*p.cache_size) + "), or calibrate an export made with --cache " +
                   std::to_string(cache));
}

std::string quantization_level(const PrecisionPlan* plan) {
  // "a8_w4" -> "A8W4", as Hailo's model zoo lists its LLMs.
  const auto label = [](const std::string& mode) {
    std::string s;
    for (char c : mode)
      if (c != '_') s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  };
  if (!plan) return "A8W4";
  std::map<std::string, int> raised;
  for (const PlanEntry& e : plan->entries)
    if (e.precision_mode != plan->default_mode) ++raised[e.precision_mode];
  std::string s = label(plan->default_mode);
  for (const auto& [mode, n] : raised) s += " + " + std::to_string(n) + " " + label(mode);
  return s;
}

int64_t bytes_with_plan(int64_t base_bytes, const PrecisionPlan& plan) {
  const int64_t extra = plan.cost ? plan.cost->extra_bytes : 0;
  int64_t sum = 0;
  if (__builtin_add_overflow(base_bytes, extra, &sum))
    throw BadInput(plan.origin + ": field 'budget': the plan's " + std::to_string(extra) +
                   " extra bytes and the model's " + std::to_string(base_bytes) + " add up past 2^63 bytes");
  return sum;
}

namespace {

// Each plan entry with the HN layers whose original_names list its ONNX
// node; an entry that maps to none is refused, with the closest names.
std::vector<MappedEntry> map_entries(const PrecisionPlan& plan, const HnModel& hn) {
  // One pass over the HN: original name -> its layers (document order).
  std::unordered_map<std::string, std::vector<std::string>> by_node;
  std::vector<std::string> all_names;
  for (const auto& layer : hn.layer_names()) {
    const auto& l = hn.layer(layer);
    if (!l.contains("original_names") || !l["original_names"].is_array()) continue;
    for (const auto& o : l["original_names"]) {
      if (!o.is_string()) continue;
      auto& list = by_node[o.get<std::string>()];
      if (list.empty()) all_names.push_back(o.get<std::string>());
      if (list.empty() || list.back() != layer) list.push_back(layer);
    }
  }
  std::vector<MappedEntry> out;
  std::vector<std::string> unmapped;
  size_t unmapped_count = 0;
  for (const auto& e : plan.entries) {
    auto it = by_node.find(e.onnx_node);
    if (it != by_node.end()) {
      out.push_back({&e, it->second});
      continue;
    }
    // Only the listed entries get suggestions: each costs a pass over the names.
    if (++unmapped_count > kListedProblems) continue;
    std::string near;
    for (const auto& c : closest(e.onnx_node, all_names, 3))
      near += std::string(near.empty() ? "" : ", ") + "'" + printable(c) + "' (" + printable(join(by_node[c])) + ")";
    unmapped.push_back(
        entry_label(e) + " (" + e.precision_mode + "): no layer lists it in original_names" +
        (near.empty() ? std::string("; the HN records no original_names at all") : "; closest: " + near));
  }
  if (unmapped_count)
    throw BadInput(plan.origin + ": " + std::to_string(unmapped_count) + " plan entr" +
                   (unmapped_count == 1 ? "y maps" : "ies map") + " to no layer of " + hn.label() + ":" +
                   listed(unmapped, unmapped_count) +
                   "\n(was the plan made for this export? Re-run `llm2hef calibrate` on the export this HAR was "
                   "parsed from)");
  return out;
}

void check_modes_fit(const PrecisionPlan& plan, const HnModel& hn, const std::vector<MappedEntry>& out) {
  // A mode on a layer type no Hailo script gives it: the DFC refuses the
  // pair in optimize ("Unsupported layers for the provided optimization
  // target"), or worse, takes it untested.
  std::vector<std::string> misplaced;
  size_t misplaced_count = 0;
  for (const auto& m : out)
    for (const auto& layer : m.layers) {
      const std::string type = hn.type(layer);
      if (mode_applies_to(m.entry->precision_mode, type, layer) || ++misplaced_count > kListedProblems) continue;
      const auto it = mode_types().find(m.entry->precision_mode);
      const std::string types = it == mode_types().end() ? std::string("no") : join(it->second);
      misplaced.push_back(entry_label(*m.entry) + " (" + m.entry->precision_mode + ") maps to " + printable(layer) +
                          ", a layer of type " + printable(type) + "; Hailo's scripts give " + m.entry->precision_mode +
                          " to " + types +
                          (m.entry->precision_mode == "a16_w16" ? " layers and input_layer1" : " layers"));
    }
  if (misplaced_count)
    throw BadInput(plan.origin + ": " + std::to_string(misplaced_count) +
                   " plan entry/layer pair(s) give a precision mode to a layer type it is not written on "
                   "(docs/quantization-gate.md, \"Precision modes\"):" +
                   listed(misplaced, misplaced_count) + "\n(remove those lines from the plan, or change their mode)");
}

void check_groups_divide(const PrecisionPlan& plan, const HnModel& hn, const std::vector<MappedEntry>& out) {
  // Group-wise scales split each output channel's weights into groups of
  // kWeightGroupSize input columns. A conv whose input is not a whole number
  // of groups is refused: what the DFC does then is not public (LNM's
  // recipes/README.md drops such lines), so no line is written that the
  // proxy or anyone else could not say the outcome of.
  std::vector<std::string> ungroupable;
  size_t ungroupable_count = 0;
  for (const auto& m : out) {
    if (!m.entry->weight_group_size) continue;
    for (const auto& layer : m.layers) {
      std::string why;
      if (hn.type(layer) != "conv") {
        why = "a layer of type " + printable(hn.type(layer)) + ", not a conv";
      } else {
        const auto shapes = hn.input_shapes(layer);
        if (shapes.empty()) why = "a conv whose input width the HN does not record";
        for (const auto& shape : shapes)
          if (why.empty() && (shape.empty() || shape.back() <= 0 || shape.back() % m.entry->weight_group_size))
            why = "a conv whose input is " +
                  (shape.empty() ? std::string("of no width") : std::to_string(shape.back()) + " wide") +
                  ", not a multiple of " + std::to_string(m.entry->weight_group_size);
      }
      if (why.empty() || ++ungroupable_count > kListedProblems) continue;
      ungroupable.push_back(entry_label(*m.entry) + " (weight_group_size=" +
                            std::to_string(m.entry->weight_group_size) + ") maps to " + printable(layer) + ", " + why);
    }
  }
  if (ungroupable_count)
    throw BadInput(plan.origin + ": " + std::to_string(ungroupable_count) +
                   " plan entry/layer pair(s) ask for weight_group_size where it does not divide the input "
                   "(docs/quantization-gate.md, \"Group-wise weight scales\"; what the DFC does with a partial "
                   "group is not public):" +
                   listed(ungroupable, ungroupable_count) + "\n(remove weight_group_size from those entries)");
}

void check_one_mode_per_layer(const PrecisionPlan& plan, const std::vector<MappedEntry>& out) {
  // One layer, one mode and one group size: the DFC would apply whichever
  // line it reads last.
  std::unordered_map<std::string, const PlanEntry*> owner;
  std::vector<std::string> conflicts;
  size_t conflict_count = 0;
  const auto group_text = [](const PlanEntry& e) {
    return e.weight_group_size ? " with weight_group_size=" + std::to_string(e.weight_group_size) : std::string();
  };
  for (const auto& m : out)
    for (const auto& layer : m.layers) {
      auto [it, fresh] = owner.emplace(layer, m.entry);
      const PlanEntry& first = *it->second;
      if (fresh ||
          (first.precision_mode == m.entry->precision_mode && first.weight_group_size == m.entry->weight_group_size) ||
          ++conflict_count > kListedProblems)
        continue;
      conflicts.push_back(printable(layer) + ": " + entry_label(first) + " says " + first.precision_mode +
                          group_text(first) + ", " + entry_label(*m.entry) + " says " + m.entry->precision_mode +
                          group_text(*m.entry));
    }
  if (conflict_count)
    throw BadInput(plan.origin + ": plan entries give one HN layer two precision modes or group sizes:" +
                   listed(conflicts, conflict_count));
}

}  // namespace

std::vector<MappedEntry> map_plan_to_layers(const PrecisionPlan& plan, const HnModel& hn) {
  std::vector<MappedEntry> out = map_entries(plan, hn);
  check_modes_fit(plan, hn, out);
  check_groups_divide(plan, hn, out);
  check_one_mode_per_layer(plan, out);
  return out;
}

}  // namespace llm2hef::core::har
