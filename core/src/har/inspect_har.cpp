#include "llm2hef/core/har/inspect_har.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "fixups/fixup_common.hpp"
#include "llm2hef/core/har/har_file.hpp"

namespace llm2hef::core::har {

namespace fs = std::filesystem;

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
    inputs.push_back(
        {{"name", n},
         {"shape", shapes.empty() ? nlohmann::json(nullptr) : nlohmann::json(shapes[0])},
         {"original_names",
          l.contains("original_names") ? nlohmann::json::parse(l["original_names"].dump()) : nlohmann::json::array()},
         {"consumers", hn.outputs(n)}});
  }
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& n : hn.output_order()) {
    const auto shapes = hn.output_shapes(n);
    outputs.push_back({{"name", n},
                       {"type", hn.type(n)},
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
    caches.push_back({{"name", n},
                      {"type", hn.type(n)},
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
  if (!r["scope_problem"].is_null())
    s += "  network groups: none usable: " + r["scope_problem"].get<std::string>() + "\n";
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
    s += "    " + i["name"].get<std::string>() + "  " + shape_str(i["shape"]) + (orig.empty() ? "" : "  from " + orig) +
         "\n";
  }
  s += "  outputs (in order):\n";
  for (const auto& o : r["outputs"])
    s += "    " + o["name"].get<std::string>() + "  " + o["type"].get<std::string>() + "  " + shape_str(o["shape"]) +
         "\n";
  s += "  cache layers: " + std::to_string(r["cache_layers"].size()) + "\n";
  for (const auto& c : r["cache_layers"])
    s += "    " + c["name"].get<std::string>() + "  " + c["type"].get<std::string>() + "  " + shape_str(c["shape"]) +
         (c["in_network_group"].get<bool>() ? "" : "  (not in a network group: ignored)") + "\n";
  return s;
}

}  // namespace llm2hef::core::har
