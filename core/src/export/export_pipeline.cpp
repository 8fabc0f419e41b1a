#include <cmath>
#include <fstream>

#include <spdlog/spdlog.h>

#include "llm2hef/core/atomic_output.hpp"
#include "llm2hef/core/json_text.hpp"
#include "llm2hef/core/checkpoint_dir.hpp"
#include "llm2hef/core/dfc_kit.hpp"
#include "llm2hef/core/export.hpp"
#include "llm2hef/core/genai_resources.hpp"
#include "llm2hef/core/npy.hpp"
#include "llm2hef/core/output_guard.hpp"
#include "llm2hef/core/progress.hpp"
#include "llm2hef/core/validate_script.hpp"
#include "llm2hef/registry/registry.hpp"
#include "llm2hef/sdk/build_info.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

sdk::ExportOptions export_options(const ExportRequest& r, const sdk::AdapterInfo& info) {
  sdk::ExportOptions o;
  o.cache_size = r.cache_size;
  o.prefill = r.prefill;
  o.lm_head_shards = r.lm_head_shards;
  for (const auto& [name, value] : r.adapter_options) {
    const sdk::OptionSpec* spec = nullptr;
    for (const auto& s : info.options)
      if (s.name == name) spec = &s;
    if (!spec) {
      std::string known;
      for (const auto& s : info.options) known += " --" + s.name;
      throw UsageError("unknown option --" + name + " for adapter '" + info.name + "'" +
                       (known.empty() ? " (it takes none)" : " (it takes:" + known + ")"));
    }
    if (!spec->choices.empty() && std::find(spec->choices.begin(), spec->choices.end(), value) == spec->choices.end()) {
      std::string choices;
      for (const auto& c : spec->choices) choices += (choices.empty() ? "" : ", ") + c;
      throw UsageError("--" + name + " " + value + ": expected one of " + choices);
    }
    o.adapter_options[name] = value;
  }
  return o;
}

// The adapter's plan must agree with what the runtime will do.
void validate_plan(const sdk::Plan& p, const sdk::Checkpoint& ckpt, const std::string& adapter) {
  auto bad = [&](const std::string& what) { throw InternalError("adapter '" + adapter + "' planned " + what); };
  if (p.theta.empty() || p.theta.size() % 2) bad("a theta of length " + std::to_string(p.theta.size()) + " (must be even)");
  if (p.pe_q_tiles != p.dims.heads) bad("q tables tiled " + std::to_string(p.pe_q_tiles) + " times for " + std::to_string(p.dims.heads) + " heads");
  if (p.pe_k_tiles < 1) bad("no k table tiling");
  int64_t sum = 0;
  for (int64_t w : p.lm_head_shards) sum += w;
  if (sum != p.dims.vocab) bad("lm_head shards summing to " + std::to_string(sum) + ", not the vocabulary");
  ckpt.expect(p.embedding_tensor, {p.dims.vocab, p.dims.hidden});
}

json input_entries(const sdk::Plan& p) {
  json inputs = json::array();
  const int64_t n = p.cache_size, t = static_cast<int64_t>(p.theta.size());
  for (size_t i = 0; i < sdk::kRuntimeInputs.size(); ++i) {
    const auto& ri = sdk::kRuntimeInputs[i];
    json shape = i == 0 ? json{1, n, p.dims.hidden} : i == 1 ? json{1, 1, n, p.dims.heads * n} : json{1, n, t};
    json format = i == 1 ? json{"BATCH", "HEIGHT", "WIDTH", "CHANNELS"} : json{"BATCH", "WIDTH", "CHANNELS"};
    inputs.push_back({{"name", ri.name}, {"role", ri.role}, {"shape", shape},
                      {"dfc_layer", "input_layer" + std::to_string(i + 1)}, {"dfc_format", format}});
  }
  return inputs;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw BadInput(path.string() + ": write failed");
}

// doc.dump()'s bytes, streamed: no second copy of a large document as text.
void write_json(const fs::path& path, const nlohmann::json& doc) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << doc;
  if (!out) throw BadInput(path.string() + ": write failed");
}

void stream_embeddings(const sdk::Checkpoint& ckpt, const sdk::Plan& p, const fs::path& path, Progress& progress,
                       uint64_t done_before) {
  NpyWriter w(path, {p.dims.vocab, p.dims.hidden});
  const int64_t block = std::max<int64_t>(1, (16 << 20) / 4 / p.dims.hidden);
  std::vector<float> rows;
  for (int64_t r = 0; r < p.dims.vocab; r += block) {
    const int64_t e = std::min(p.dims.vocab, r + block);
    rows.resize(static_cast<size_t>((e - r) * p.dims.hidden));
    ckpt.read_rows(p.embedding_tensor, r, e, rows);
    w.append(rows);
    progress.update(done_before + static_cast<uint64_t>(e * p.dims.hidden) * 4);
  }
  w.finish();
}

}  // namespace

// Warns once per tensor holding NaN/Inf and returns the manifest entries.
static json report_nonfinite(const std::vector<NonFiniteWeight>& bad) {
  json entries = json::array();
  for (const NonFiniteWeight& w : bad) {
    const std::string value = std::isnan(w.value) ? "NaN" : w.value > 0 ? "+Inf" : "-Inf";
    json index = w.index;
    spdlog::warn("{}: tensor '{}' holds {} at {} (and maybe more); the export keeps it, the chip will compute "
                 "garbage from it (--refuse-nonfinite makes this an error)",
                 w.file, w.tensor, value, index.dump());
    entries.push_back({{"tensor", w.tensor}, {"file", w.file}, {"first_index", index}, {"value", value}});
  }
  return entries;
}

void check_cache_and_prefill(int64_t cache_size, int64_t prefill) {
  if (cache_size < 2) throw UsageError("--cache must be at least 2 (it is the KV-cache size and the graph's sequence length)");
  // SEQ = cache: the mask input alone is cache x (heads * cache) values, so
  // beyond this even one head needs a 4 GiB float32 mask (Hailo's own
  // models use 2048).
  constexpr int64_t kMaxCache = 32768;
  if (cache_size > kMaxCache)
    throw UsageError("--cache " + std::to_string(cache_size) + " is larger than " + std::to_string(kMaxCache) +
                     ", the largest llm2hef exports (the graph's sequence length equals the cache; Hailo's models use 2048)");
  if (prefill < 1 || prefill > cache_size)
    throw UsageError("--prefill must be between 1 and --cache (" + std::to_string(cache_size) + ")");
}

json export_model(const ExportRequest& r, const plugins::AdapterHost& host) {
  check_cache_and_prefill(r.cache_size, r.prefill);

  std::unique_ptr<sdk::Checkpoint> ckpt =
      open_checkpoint(r.model_dir, r.refuse_nonfinite ? NonFinitePolicy::refuse : NonFinitePolicy::record);
  const registry::Resolution res = registry::resolve(ckpt->config(), host, r.adapter);
  if (!res.warning.empty()) spdlog::warn("{}", res.warning);
  const sdk::Adapter& adapter = res.adapter->adapter();
  const sdk::AdapterInfo& info = res.adapter->info();
  const sdk::ExportOptions options = export_options(r, info);
  check_export_output(r.output, r.model_dir, r.force);  // before any work: --force never deletes an input
  const sdk::Plan plan = adapter.plan(*ckpt, options);
  validate_plan(plan, *ckpt, info.name);
  if (ckpt->tokenizer_json().empty())
    throw BadInput(r.model_dir.string() + ": tokenizer.json is missing; the Hailo runtime embeds it in the HEF");

  const std::string model_name = fs::weakly_canonical(r.model_dir).filename().string();
  const std::string scope = dfc_scope_name(r.name.empty() ? model_name : r.name);

  uint64_t total = 0;
  for (const auto& t : ckpt->tensor_names()) total += static_cast<uint64_t>(ckpt->info(t).numel()) * 4;
  total += static_cast<uint64_t>(plan.dims.vocab * plan.dims.hidden) * 4 * 2;  // head copy + embeddings.npy
  Progress progress("exporting " + model_name, total, r.progress);

  AtomicDir out(r.output, r.force);
  const fs::path model_path = out.path() / "model.onnx";
  sdk::GraphBuilder graph(scope, out.path() / "model.onnx.data", [&](uint64_t bytes) { progress.update(bytes); });
  adapter.build_graph(*ckpt, plan, graph);
  graph.save(model_path, {{"llm2hef.adapter", info.name + " " + info.version},
                          {"llm2hef.cache_size", std::to_string(plan.cache_size)}});

  json manifest;
  manifest["format_version"] = 1;
  manifest["llm2hef_version"] = LLM2HEF_SDK_VERSION;
  manifest["adapter"] = registry::resolution_json(res);
  manifest["model"] = {{"name", model_name}, {"dir", fs::absolute(r.model_dir).string()},
                       {"architectures", ckpt->config().raw().value("architectures", json::array())},
                       {"model_type", ckpt->config().find_string("model_type").value_or("")}};
  manifest["cache_size"] = plan.cache_size;
  manifest["prefill"] = plan.prefill;
  manifest["dims"] = {{"hidden", plan.dims.hidden}, {"layers", plan.dims.layers}, {"vocab", plan.dims.vocab},
                      {"heads", plan.dims.heads}, {"kv_heads", plan.dims.kv_heads}, {"head_dim", plan.dims.head_dim},
                      {"intermediate", plan.dims.intermediate}};
  manifest["theta_length"] = plan.theta.size();
  manifest["pe_tiles"] = {{"q", plan.pe_q_tiles}, {"k", plan.pe_k_tiles}};
  manifest["inputs"] = input_entries(plan);
  manifest["outputs"] = json::array({{{"name", "logits"}, {"shape", {1, 1, plan.dims.vocab}}}});
  manifest["lm_head_shards"] = plan.lm_head_shards;
  manifest["lm_head_shard_reason"] = plan.lm_head_shard_reason;
  manifest["options"] = plan.options;
  manifest["rewrites"] = plan.rewrites;
  manifest["notes"] = plan.notes;
  json annotations = json::object();
  for (const auto& [k, v] : graph.annotations()) annotations[k] = v;
  manifest["graph_annotations"] = annotations;
  manifest["dfc"] = {{"scope", scope}, {"calib_size", r.calib_size},
                     {"network_groups", {scope + "__prefill", scope + "__tbt"}}};
  manifest["files"] = {
      {"model.onnx", "the DFC-parsable graph (static shapes, six runtime inputs, last-position logits)"},
      {"model.onnx.data", "its weights (ONNX external data)"},
      {"resources/embeddings.npy", "embedding matrix [vocab, hidden] float32, for add_external_resources (embeddings.bin)"},
      {"resources/theta.npy", "theta vector float32, for add_external_resources (rope_theta_data.bin)"},
      {"resources/tokenizer.json", "tokenizer for add_external_file, fixed for the runtime"},
      {"resources/hailo-config.json", "runtime configuration for add_external_file"},
      {"optimize.alls", "model script for runner.optimize()"},
      {"compile.alls", "model script for runner.compile()"},
      {"compile.py", "DFC driver: parse, HN fixups, resources, calibration, optimize, compile"},
      {kValidateScriptName, "on-device check (Hailo-10H host, HailoRT Python): generation through genai.LLM, "
                            "per-position agreement of the __prefill/__tbt groups with model.onnx in fp32"},
      {"manifest.json", "this file"},
  };
  check_graph_contract(model_path, manifest);

  // Resources.
  const fs::path res_dir = out.path() / "resources";
  fs::create_directory(res_dir);
  progress.set_label("writing resources");
  stream_embeddings(*ckpt, plan, res_dir / "embeddings.npy", progress, graph.external_bytes());
  write_npy(res_dir / "theta.npy", {static_cast<int64_t>(plan.theta.size())}, plan.theta);
  // Every weight has been read by now (graph and embeddings).
  if (const std::vector<NonFiniteWeight> bad = nonfinite_weights(*ckpt); !bad.empty())
    manifest["nonfinite_weights"] = report_nonfinite(bad);
  std::vector<std::string> changes;
  // One DOM of tokenizer.json (its text is freed once parsed), edited in
  // place and serialized straight to the file: peak memory is that DOM.
  TokenizerFix tok = fix_tokenizer(sdk::read_json(ckpt->tokenizer_json(), sdk::JsonLimits::tokenizer()),
                                   ckpt->tokenizer_json().string(), plan.dims.vocab);
  changes.insert(changes.end(), tok.changes.begin(), tok.changes.end());
  write_json(res_dir / "tokenizer.json", tok.tokenizer);  // its strings were parsed, so valid UTF-8
  write_text(res_dir / "hailo-config.json", core::json_text(make_hailo_config(*ckpt, plan, tok, changes), 2) + "\n");
  manifest["resource_changes"] = changes;

  // DFC kit.
  write_text(out.path() / "optimize.alls", optimize_script(scope, plan, r.calib_size));
  write_text(out.path() / "compile.alls", compile_script(scope));
  write_text(out.path() / "compile.py", compile_driver(manifest));
  write_text(out.path() / kValidateScriptName, validate_script(manifest));
  for (const char* script : {"compile.py", kValidateScriptName})
    fs::permissions(out.path() / script, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add);
  write_text(out.path() / "manifest.json", core::json_text(manifest, 2) + "\n");
  progress.finish();
  out.commit();
  return manifest;
}

}  // namespace llm2hef::core
