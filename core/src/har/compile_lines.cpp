#include "llm2hef/core/har/compile_lines.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "fixups/fixup_common.hpp"
#include "llm2hef/core/har/har_file.hpp"
#include "llm2hef/core/har/npz_stream.hpp"

namespace llm2hef::core::har {

namespace fs = std::filesystem;

ScriptLines optimize_lines(const fs::path& path, int64_t pe_width) {
  ScriptLines out;
  const HarIndex idx = scan_har(path);
  const HnModel& hn = *idx.hn;
  std::vector<std::string> convs = hn.layers_of_type("conv");
  std::set<std::string> conv_set(convs.begin(), convs.end());
  std::map<std::string, double> zero_fraction;  // conv -> fraction of zero kernel elements
  if (!idx.weights_member.empty()) {
    auto in = TarReader::open_file(path);
    while (auto m = in->next()) {
      if (m->name != idx.weights_member) continue;
      auto read = [&](void* b, size_t n) { return in->read(b, n); };
      visit_npz(read, idx.label + ": " + m->name, [&](const std::string& key, const NpyInfo& info, const auto& data) {
        const size_t slash = key.rfind('/');
        if (slash == std::string::npos || key.substr(slash + 1) != "kernel:0" || !conv_set.count(key.substr(0, slash)))
          return;
        uint64_t total = 0, zeros = 0;
        std::vector<unsigned char> buf((1 << 20) / info.element_size * info.element_size);
        size_t carry = 0;  // bytes of a partial element at the front of buf
        for (;;) {
          const size_t got = data(buf.data() + carry, buf.size() - carry);
          if (got == 0) break;
          const size_t have = carry + got, whole = have / info.element_size * info.element_size;
          for (size_t i = 0; i < whole; i += info.element_size) {
            ++total;
            bool zero = true;
            for (size_t b = 0; b < info.element_size && zero; ++b) zero = buf[i + b] == 0;
            zeros += zero;
          }
          carry = have - whole;
          std::copy(buf.begin() + static_cast<long>(whole), buf.begin() + static_cast<long>(have), buf.begin());
        }
        zero_fraction[key.substr(0, slash)] = total ? static_cast<double>(zeros) / static_cast<double>(total) : 1.0;
      });
    }
  } else {
    out.notes.push_back("no .npz weights member: constant convs cannot be recognized by their kernels");
  }
  std::vector<std::string> chosen, constant, narrow;
  for (const auto& c : convs) {
    auto z = zero_fraction.find(c);
    if (z != zero_fraction.end() && z->second > 0.9) {
      constant.push_back(c);
      continue;
    }
    int64_t min_w = -1;
    for (const auto& s : hn.input_shapes(c))
      if (!s.empty()) min_w = min_w < 0 ? s.back() : std::min(min_w, s.back());
    if (min_w >= 0 && min_w <= pe_width) {
      narrow.push_back(c);
      continue;
    }
    chosen.push_back(c);
  }
  if (!chosen.empty()) out.lines.push_back("quantization_param([" + join(chosen) + "], precision_mode=a8_w4)");
  out.notes.push_back(std::to_string(chosen.size()) + " conv(s) at a8_w4; " + std::to_string(constant.size()) +
                      " constant (> 90% zero kernel) left out" + (constant.empty() ? "" : ": " + join(constant)) +
                      "; " + std::to_string(narrow.size()) + " with an input <= " + std::to_string(pe_width) +
                      " wide left out" + (narrow.empty() ? "" : ": " + join(narrow)));
  return out;
}

ScriptLines compile_lines(const HnModel& hn) {
  ScriptLines out;
  // Only the two groups are compiled; the base scope the quantized HN keeps
  // next to them is ignored here (hailo-contract.md section 3).
  const KvScopes groups = require_kv_scopes(hn);
  const std::string &prefill = groups.prefill, &tbt = groups.tbt;
  for (const auto& g : {prefill, tbt}) out.lines.push_back(g + " = network_group([" + g + "])");
  std::map<std::string, std::set<std::string>> per_group;
  size_t ignored = 0;
  for (const auto& name : hn.cache_layers()) {
    const std::string group = scope_of(name), short_ = short_name(name);
    if (!groups.is_group(group)) {
      ++ignored;
      continue;
    }
    per_group[group].insert(short_);
    if (hn.type(name) == "input_layer") {
      const auto succ = hn.outputs(name);
      if (succ.empty()) throw BadInput(hn.label() + ": cache input '" + name + "' feeds nothing");
      out.lines.push_back(group + "/tf_rgb_to_hailo_rgb_from_" + short_ + " = format_conversion(" + name + ", " +
                          succ[0] + ", tf_rgb_to_hailo_rgb)");
    } else {
      const auto pred = hn.inputs(name);
      if (pred.empty()) throw BadInput(hn.label() + ": cache output '" + name + "' has no producer");
      out.lines.push_back(group + "/hailo_rgb_to_tf_rgb_to_" + short_ + " = format_conversion(" + pred[0] + ", " +
                          name + ", hailo_rgb_to_tf_rgb)");
    }
  }
  if (!groups.base.empty())
    out.notes.push_back("base scope '" + groups.base + "' ignored (not a network group)" +
                        (ignored ? "; its " + std::to_string(ignored) + " cache layer(s) get no format_conversion"
                                 : std::string()));
  if (per_group[prefill] != per_group[tbt])
    throw BadInput(hn.label() + ": the cache layers of '" + prefill + "' (" + std::to_string(per_group[prefill].size()) +
                   ") and '" + tbt + "' (" + std::to_string(per_group[tbt].size()) +
                   ") differ; both groups need the same caches (hailo-contract.md section 8)");
  if (per_group[prefill].empty())
    out.notes.push_back("no io_type cache layers: no format_conversion lines (was the KV cache set up?)");
  else
    out.notes.push_back(std::to_string(per_group[prefill].size()) + " cache layer(s) per group");
  return out;
}

nlohmann::json inspect_har(const fs::path& path) {
  const HarIndex idx = scan_har(path);
  const HnModel& hn = *idx.hn;
  nlohmann::json members = nlohmann::json::array();
  for (const auto& m : idx.members)
    members.push_back({{"name", m.entry.name}, {"size", m.entry.size}, {"role", role_name(m.role)}});
  std::map<std::string, int64_t> counts;
  for (const auto& n : hn.layer_names()) ++counts[hn.type(n)];
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& n : hn.layers_of_type("input_layer")) {
    if (hn.is_cache(n)) continue;
    const auto& l = hn.layer(n);
    const auto shapes = hn.output_shapes(n);
    inputs.push_back({{"name", n},
                      {"shape", shapes.empty() ? nlohmann::json(nullptr) : nlohmann::json(shapes[0])},
                      {"original_names", l.contains("original_names") ? nlohmann::json::parse(l["original_names"].dump())
                                                                       : nlohmann::json::array()},
                      {"consumers", hn.outputs(n)}});
  }
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& n : hn.output_order()) {
    const auto shapes = hn.output_shapes(n);
    outputs.push_back({{"name", n}, {"type", hn.type(n)},
                       {"shape", shapes.empty() ? nlohmann::json(nullptr) : nlohmann::json(shapes[0])}});
  }
  // After optimize: which scopes are the two network groups, and the base
  // scope that is ignored (hailo-contract.md section 3). A parsed HN has
  // neither, and no problem to report.
  const KvScopes kv = kv_scopes(hn);
  nlohmann::json groups = nullptr, base = nullptr, scope_problem = nullptr;
  if (kv.problem.empty()) {
    groups = nlohmann::json::array({kv.prefill, kv.tbt});
    if (!kv.base.empty()) base = kv.base;
  } else if (kv.has_kv_suffix || !hn.cache_layers().empty()) {
    scope_problem = kv.problem;
  }
  nlohmann::json caches = nlohmann::json::array();
  for (const auto& n : hn.cache_layers()) {
    const auto shapes = hn.output_shapes(n);
    caches.push_back({{"name", n}, {"type", hn.type(n)},
                      {"shape", shapes.empty() ? nlohmann::json(nullptr) : nlohmann::json(shapes[0])},
                      {"in_network_group", kv.is_group(scope_of(n))}});
  }
  return {{"file", path.string()},
          {"name", hn.name()},
          {"state", idx.state.empty() ? nlohmann::json(nullptr) : nlohmann::json(idx.state)},
          {"sdk_version", idx.metadata.is_object() && idx.metadata.contains("sdk_version") ? idx.metadata["sdk_version"]
                                                                                            : nlohmann::json(nullptr)},
          {"stage", idx.stage_name},
          {"stage_reason", idx.stage_reason},
          {"hn_member", idx.hn_member},
          {"weights_member", idx.weights_member.empty() ? nlohmann::json(nullptr) : nlohmann::json(idx.weights_member)},
          {"members", members},
          {"total_bytes", idx.total_bytes},
          {"scopes", hn.scopes()},
          {"network_groups", groups},
          {"base_scope", base},
          {"scope_problem", scope_problem},
          {"layer_count", hn.layer_names().size()},
          {"layers_by_type", counts},
          {"inputs", inputs},
          {"outputs", outputs},
          {"cache_layers", caches}};
}

namespace {
std::string shape_str(const nlohmann::json& s) { return s.is_null() ? "?" : s.dump(); }
}  // namespace

std::string inspect_har_text(const nlohmann::json& r) {
  std::string s;
  s += r["file"].get<std::string>() + ": HAR '" + r["name"].get<std::string>() + "'\n";
  s += "  state: " + (r["state"].is_null() ? std::string("(no metadata)") : r["state"].get<std::string>()) + " -> " +
       r["stage"].get<std::string>() + " (" + r["stage_reason"].get<std::string>() + ")\n";
  s += "  members:\n";
  for (const auto& m : r["members"])
    s += "    " + m["name"].get<std::string>() + "  " + std::to_string(m["size"].get<uint64_t>()) + " bytes  [" +
         m["role"].get<std::string>() + "]\n";
  s += "  scopes: " + join(r["scopes"].get<std::vector<std::string>>()) + "\n";
  if (!r["network_groups"].is_null())
    s += "  network groups: " + join(r["network_groups"].get<std::vector<std::string>>()) +
         (r["base_scope"].is_null() ? std::string()
                                    : " (base scope " + r["base_scope"].get<std::string>() + " ignored)") +
         "\n";
  if (!r["scope_problem"].is_null()) s += "  network groups: none usable: " + r["scope_problem"].get<std::string>() + "\n";
  s += "  layers: " + std::to_string(r["layer_count"].get<size_t>()) + " (";
  bool first = true;
  for (const auto& [t, n] : r["layers_by_type"].items()) {
    s += (first ? "" : ", ") + t + " " + std::to_string(n.get<int64_t>());
    first = false;
  }
  s += ")\n  inputs:\n";
  for (const auto& i : r["inputs"]) {
    std::string orig;
    for (const auto& o : i["original_names"]) orig += (orig.empty() ? "" : ", ") + o.dump();
    s += "    " + i["name"].get<std::string>() + "  " + shape_str(i["shape"]) + (orig.empty() ? "" : "  from " + orig) + "\n";
  }
  s += "  outputs (in order):\n";
  for (const auto& o : r["outputs"])
    s += "    " + o["name"].get<std::string>() + "  " + o["type"].get<std::string>() + "  " + shape_str(o["shape"]) + "\n";
  s += "  cache layers: " + std::to_string(r["cache_layers"].size()) + "\n";
  for (const auto& c : r["cache_layers"])
    s += "    " + c["name"].get<std::string>() + "  " + c["type"].get<std::string>() + "  " + shape_str(c["shape"]) +
         (c["in_network_group"].get<bool>() ? "" : "  (not in a network group: ignored)") + "\n";
  return s;
}

}  // namespace llm2hef::core::har
