#include "llm2hef/core/manifest/export_manifest.hpp"

#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

using nlohmann::json;

std::string ExportManifest::adapter_name() const {
  return adapter.is_object() && adapter.contains("name") && adapter["name"].is_string()
             ? adapter["name"].get<std::string>()
             : std::string();
}

const ManifestInput* ExportManifest::input(std::string_view role) const {
  for (const ManifestInput& i : inputs)
    if (i.role == role) return &i;
  return nullptr;
}

ExportManifest manifest_for_plan(const sdk::Plan& plan) {
  ExportManifest m;
  m.cache_size = plan.cache_size;
  m.prefill = plan.prefill;
  m.dims = plan.dims;
  m.theta_length = static_cast<int64_t>(plan.theta.size());
  m.pe_q_tiles = plan.pe_q_tiles;
  m.pe_k_tiles = plan.pe_k_tiles;
  const sdk::RuntimeSizes sizes = sdk::runtime_sizes(plan);
  for (const sdk::RuntimeInput& ri : sdk::kRuntimeInputs) {
    ManifestInput in{std::string(ri.name),
                     std::string(ri.role),
                     sdk::graph_shape(ri, sizes),
                     std::string(ri.dfc_layer),
                     {}};
    for (std::string_view axis : ri.dfc_format) in.dfc_format.emplace_back(axis);
    m.inputs.push_back(std::move(in));
  }
  m.outputs.push_back({"logits", {1, 1, plan.dims.vocab}});
  m.lm_head_shards = plan.lm_head_shards;
  m.lm_head_shard_reason = plan.lm_head_shard_reason;
  m.options = plan.options;
  m.cache_cost = plan.cache_cost;
  m.rewrites = plan.rewrites;
  m.notes = plan.notes;
  return m;
}

// ---------------------------------------------------------------- writing

json manifest_json(const ExportManifest& m) {
  json doc;
  doc["manifest_version"] = m.manifest_version;
  doc["llm2hef_version"] = m.llm2hef_version;
  doc["adapter"] = m.adapter;
  doc["model"] = {{"name", m.model.name},
                  {"dir", m.model.dir},
                  {"architectures", m.model.architectures},
                  {"model_type", m.model.model_type}};
  if (m.model.parameters) doc["model"]["parameters"] = *m.model.parameters;
  doc["cache_size"] = m.cache_size;
  doc["prefill"] = m.prefill;
  doc["dims"] = {{"hidden", m.dims.hidden},
                 {"layers", m.dims.layers},
                 {"vocab", m.dims.vocab},
                 {"heads", m.dims.heads},
                 {"kv_heads", m.dims.kv_heads},
                 {"head_dim", m.dims.head_dim},
                 {"intermediate", m.dims.intermediate}};
  doc["theta_length"] = m.theta_length;
  doc["pe_tiles"] = {{"q", m.pe_q_tiles}, {"k", m.pe_k_tiles}};
  json inputs = json::array();
  for (const ManifestInput& i : m.inputs)
    inputs.push_back({{"name", i.name},
                      {"role", i.role},
                      {"shape", i.shape},
                      {"dfc_layer", i.dfc_layer},
                      {"dfc_format", i.dfc_format}});
  doc["inputs"] = inputs;
  json outputs = json::array();
  for (const ManifestOutput& o : m.outputs) outputs.push_back({{"name", o.name}, {"shape", o.shape}});
  doc["outputs"] = outputs;
  doc["lm_head_shards"] = m.lm_head_shards;
  doc["lm_head_shard_reason"] = m.lm_head_shard_reason;
  doc["options"] = m.options;
  if (m.cache_cost.values_per_position > 0)
    doc["cache_cost"] = {{"values_per_position", m.cache_cost.values_per_position},
                         {"layout", m.cache_cost.layout},
                         {"figures", m.cache_cost.figures}};
  doc["rewrites"] = m.rewrites;
  doc["notes"] = m.notes;
  doc["resource_changes"] = m.resource_changes;
  if (!m.nonfinite_weights.empty()) doc["nonfinite_weights"] = m.nonfinite_weights;
  doc["graph_annotations"] = m.graph_annotations;
  doc["dfc"] = {{"scope", m.dfc.scope}, {"calib_size", m.dfc.calib_size}, {"network_groups", m.dfc.network_groups}};
  doc["files"] = m.files;
  return doc;
}

std::string manifest_text(const ExportManifest& m) { return json_text(manifest_json(m), 2) + "\n"; }

// ---------------------------------------------------------------- reading

namespace {

// Every read names the file and the dotted key of the field at fault.
class Fields {
 public:
  explicit Fields(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw BadInput(origin_ + ": field '" + key + "': " + what);
  }
  const json& at(const json& parent, const std::string& path, const std::string& key) const {
    if (!parent.is_object() || !parent.contains(key)) fail(path, "missing");
    return parent.at(key);
  }
  const json& object(const json& parent, const std::string& path, const std::string& key) const {
    const json& v = at(parent, path, key);
    if (!v.is_object()) fail(path, "expected an object, got " + v.dump().substr(0, 60));
    return v;
  }
  const json& array(const json& parent, const std::string& path, const std::string& key) const {
    const json& v = at(parent, path, key);
    if (!v.is_array()) fail(path, "expected a list, got " + v.dump().substr(0, 60));
    return v;
  }
  int64_t integer(const json& v, const std::string& path) const {
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX))
      fail(path, "expected an integer, got " + v.dump().substr(0, 60));
    return v.get<int64_t>();
  }
  int64_t integer(const json& parent, const std::string& path, const std::string& key) const {
    return integer(at(parent, path, key), path);
  }
  // A size, width or count: a positive integer.
  int64_t positive(const json& parent, const std::string& path, const std::string& key) const {
    const int64_t v = integer(parent, path, key);
    if (v < 1) fail(path, std::to_string(v) + " is not a positive integer");
    return v;
  }
  std::string string(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "expected a string, got " + v.dump().substr(0, 60));
    return v.get<std::string>();
  }
  std::string string(const json& parent, const std::string& path, const std::string& key) const {
    return string(at(parent, path, key), path);
  }
  std::vector<std::string> strings(const json& parent, const std::string& path, const std::string& key) const {
    std::vector<std::string> out;
    const json& list = array(parent, path, key);
    for (size_t i = 0; i < list.size(); ++i) out.push_back(string(list[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }
  std::vector<int64_t> positives(const json& parent, const std::string& path, const std::string& key) const {
    std::vector<int64_t> out;
    const json& list = array(parent, path, key);
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string item = path + "[" + std::to_string(i) + "]";
      out.push_back(integer(list[i], item));
      if (out.back() < 1) fail(item, std::to_string(out.back()) + " is not a positive integer");
    }
    return out;
  }
  std::map<std::string, std::string> string_map(const json& parent, const std::string& path,
                                                const std::string& key) const {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : object(parent, path, key).items()) out[k] = string(v, path + "." + k);
    return out;
  }

 private:
  std::string origin_;
};

}  // namespace

ExportManifest parse_manifest(const json& document, const std::string& origin) {
  const Fields f(origin);
  if (!document.is_object()) throw BadInput(origin + ": not an llm2hef export manifest (not a JSON object)");
  json doc = document;
  // Version 1 spelled the version format_version and kept an adapter's cost
  // figures among its options; read it as version 2 without a cache_cost.
  if (!doc.contains("manifest_version") && doc.contains("format_version") && doc["format_version"] == 1) {
    doc.erase("format_version");
    doc["manifest_version"] = kManifestVersion;
  }
  if (doc.contains("manifest_version") && doc["manifest_version"].is_number_integer() &&
      doc["manifest_version"].get<int64_t>() > kManifestVersion)
    f.fail("manifest_version", doc["manifest_version"].dump() + " is newer than this llm2hef reads (" +
                                   std::to_string(kManifestVersion) + "); use the llm2hef that wrote it");
  const auto violations = export_manifest_schema().validate(doc);
  if (!violations.empty())
    throw BadInput(origin + ": not a manifest llm2hef export writes (registry/schema/export-manifest.schema.json): " +
                   registry::describe(violations));
  ExportManifest m;
  m.manifest_version = f.integer(doc, "manifest_version", "manifest_version");
  m.llm2hef_version = f.string(doc, "llm2hef_version", "llm2hef_version");
  m.adapter = f.object(doc, "adapter", "adapter");
  f.string(m.adapter, "adapter.name", "name");
  const json& model = f.object(doc, "model", "model");
  m.model.name = f.string(model, "model.name", "name");
  m.model.dir = f.string(model, "model.dir", "dir");
  m.model.architectures = f.array(model, "model.architectures", "architectures");
  m.model.model_type = f.string(model, "model.model_type", "model_type");
  if (model.contains("parameters")) m.model.parameters = f.integer(model, "model.parameters", "parameters");
  m.cache_size = f.positive(doc, "cache_size", "cache_size");
  m.prefill = f.positive(doc, "prefill", "prefill");
  const json& dims = f.object(doc, "dims", "dims");
  m.dims.hidden = f.positive(dims, "dims.hidden", "hidden");
  m.dims.layers = f.positive(dims, "dims.layers", "layers");
  m.dims.vocab = f.positive(dims, "dims.vocab", "vocab");
  m.dims.heads = f.positive(dims, "dims.heads", "heads");
  m.dims.kv_heads = f.positive(dims, "dims.kv_heads", "kv_heads");
  m.dims.head_dim = f.positive(dims, "dims.head_dim", "head_dim");
  m.dims.intermediate = f.positive(dims, "dims.intermediate", "intermediate");
  m.theta_length = f.positive(doc, "theta_length", "theta_length");
  const json& tiles = f.object(doc, "pe_tiles", "pe_tiles");
  m.pe_q_tiles = f.positive(tiles, "pe_tiles.q", "q");
  m.pe_k_tiles = f.positive(tiles, "pe_tiles.k", "k");
  const json& inputs = f.array(doc, "inputs", "inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string p = "inputs[" + std::to_string(i) + "]";
    if (!inputs[i].is_object()) f.fail(p, "expected an object");
    m.inputs.push_back({f.string(inputs[i], p + ".name", "name"), f.string(inputs[i], p + ".role", "role"),
                        f.positives(inputs[i], p + ".shape", "shape"),
                        f.string(inputs[i], p + ".dfc_layer", "dfc_layer"),
                        f.strings(inputs[i], p + ".dfc_format", "dfc_format")});
  }
  const json& outputs = f.array(doc, "outputs", "outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string p = "outputs[" + std::to_string(i) + "]";
    if (!outputs[i].is_object()) f.fail(p, "expected an object");
    m.outputs.push_back({f.string(outputs[i], p + ".name", "name"), f.positives(outputs[i], p + ".shape", "shape")});
  }
  m.lm_head_shards = f.positives(doc, "lm_head_shards", "lm_head_shards");
  if (m.lm_head_shards.empty()) f.fail("lm_head_shards", "empty");
  m.lm_head_shard_reason = f.string(doc, "lm_head_shard_reason", "lm_head_shard_reason");
  m.options = f.object(doc, "options", "options");
  if (doc.contains("cache_cost")) {
    const json& cost = f.object(doc, "cache_cost", "cache_cost");
    m.cache_cost.values_per_position = f.positive(cost, "cache_cost.values_per_position", "values_per_position");
    m.cache_cost.layout = f.string(cost, "cache_cost.layout", "layout");
    m.cache_cost.figures = f.object(cost, "cache_cost.figures", "figures");
  }
  m.rewrites = f.strings(doc, "rewrites", "rewrites");
  m.notes = f.strings(doc, "notes", "notes");
  m.resource_changes = f.strings(doc, "resource_changes", "resource_changes");
  if (doc.contains("nonfinite_weights")) m.nonfinite_weights = f.array(doc, "nonfinite_weights", "nonfinite_weights");
  m.graph_annotations = f.string_map(doc, "graph_annotations", "graph_annotations");
  const json& dfc = f.object(doc, "dfc", "dfc");
  m.dfc.scope = f.string(dfc, "dfc.scope", "scope");
  m.dfc.calib_size = f.positive(dfc, "dfc.calib_size", "calib_size");
  m.dfc.network_groups = f.strings(dfc, "dfc.network_groups", "network_groups");
  m.files = f.string_map(doc, "files", "files");
  return m;
}

ExportManifest read_manifest(const std::filesystem::path& path) {
  return parse_manifest(sdk::read_json(path), path.string());
}

}  // namespace llm2hef::core
