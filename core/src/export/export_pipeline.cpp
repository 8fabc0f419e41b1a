#include <cmath>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include <spdlog/spdlog.h>

#include "llm2hef/core/chat/hailort_template.hpp"
#include "llm2hef/core/checkpoint/chat_template.hpp"
#include "llm2hef/core/checkpoint/checkpoint_dir.hpp"
#include "llm2hef/core/dfc/calibrate_script.hpp"
#include "llm2hef/core/dfc/compile_driver.hpp"
#include "llm2hef/core/dfc/model_scripts.hpp"
#include "llm2hef/core/dfc/validate_script.hpp"
#include "llm2hef/core/export/export_kit.hpp"
#include "llm2hef/core/export/export_pipeline.hpp"
#include "llm2hef/core/export/make_hailo_config.hpp"
#include "llm2hef/core/export/tokenizer_resource.hpp"
#include "llm2hef/core/io/atomic_output.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/io/npy.hpp"
#include "llm2hef/core/io/output_guard.hpp"
#include "llm2hef/core/io/progress.hpp"
#include "llm2hef/core/runtime/hef_names.hpp"
#include "llm2hef/registry/registry.hpp"
#include "llm2hef/sdk/build_info.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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

// Warns once per tensor holding NaN/Inf and returns the manifest entries.
json report_nonfinite(const std::vector<NonFiniteWeight>& bad) {
  json entries = json::array();
  for (const NonFiniteWeight& w : bad) {
    const std::string value = std::isnan(w.value) ? "NaN" : w.value > 0 ? "+Inf" : "-Inf";
    const json index = w.index;
    spdlog::warn(
        "{}: tensor '{}' holds {} at {} (and maybe more); the export keeps it, the chip will compute "
        "garbage from it (--refuse-nonfinite makes this an error)",
        w.file, w.tensor, value, index.dump());
    entries.push_back({{"tensor", w.tensor}, {"file", w.file}, {"first_index", index}, {"value", value}});
  }
  return entries;
}

// Rows [begin, end) split into `threads` slices, fn(slice_begin, slice_end)
// run on each by a thread of its own (the caller takes the first); the
// exception of the lowest slice that threw is rethrown, so the error
// reported does not depend on timing. Threads are started per call: a call
// converts an 8 MB block, which takes far longer than starting a thread.
void split_rows(unsigned threads, int64_t begin, int64_t end, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t n = end - begin, parts = std::max<int64_t>(1, std::min<int64_t>(threads, n));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(parts));
  const auto run = [&](int64_t k) {
    try {
      fn(begin + n * k / parts, begin + n * (k + 1) / parts);
    } catch (...) {
      errors[static_cast<size_t>(k)] = std::current_exception();
    }
  };
  std::vector<std::thread> others;
  for (int64_t k = 1; k < parts; ++k) others.emplace_back(run, k);
  run(0);
  for (std::thread& t : others) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

void stream_embeddings(const sdk::Checkpoint& ckpt, const sdk::Plan& p, const fs::path& path, Progress& progress,
                       uint64_t done_before, sdk::Writeback writeback, unsigned threads) {
  NpyWriter w(path, {p.dims.vocab, p.dims.hidden}, writeback);
  // Blocks of 8 MB converted by `threads` threads into a block the writer
  // owns (no copy on the way to the kernel); the bytes do not depend on
  // `threads`, nor does the memory used.
  const int64_t block = std::max<int64_t>(1, (8 << 20) / 4 / p.dims.hidden);
  for (int64_t r = 0; r < p.dims.vocab; r += block) {
    const int64_t e = std::min(p.dims.vocab, r + block);
    w.append_block(static_cast<size_t>((e - r) * p.dims.hidden), [&](std::span<float> rows) {
      split_rows(threads, r, e, [&](int64_t a, int64_t b) {
        ckpt.read_rows(p.embedding_tensor, a, b,
                       rows.subspan(static_cast<size_t>((a - r) * p.dims.hidden),
                                    static_cast<size_t>((b - a) * p.dims.hidden)));
      });
    });
    progress.update(done_before + static_cast<uint64_t>(e * p.dims.hidden) * 4);
  }
  w.finish();
}

// The Hailo runtime embeds tokenizer.json in the HEF: without it there is
// nothing to export, so say where to get it.
void require_tokenizer_json(const sdk::Checkpoint& ckpt, const fs::path& model_dir) {
  if (!ckpt.tokenizer_json().empty()) return;
  throw BadInput(model_dir.string() +
                 ": tokenizer.json is missing; the Hailo runtime embeds it in the HEF. Copy it from the model's Hub "
                 "repository (hf download ORG/NAME tokenizer.json --local-dir " +
                 model_dir.string() +
                 "), or save it with transformers (AutoTokenizer.from_pretrained(...).save_pretrained(folder))");
}

// The DFC takes [a-z0-9_] names starting with a letter: a note saying when the
// name given was rewritten, empty when it was not.
std::string dfc_name_note(const std::string& name, const std::string& scope) {
  if (name.empty() || scope == name) return {};
  return "--name '" + name + "' is written '" + scope +
         "' for the DFC (network names are lowercase letters, digits and '_', starting with a letter)";
}

// The bytes the progress bar counts: every tensor as float32, plus the head
// copy and embeddings.npy.
uint64_t bytes_to_export(const sdk::Checkpoint& ckpt, const sdk::Plan& plan) {
  uint64_t total = 0;
  for (const auto& t : ckpt.tensor_names()) total += static_cast<uint64_t>(ckpt.info(t).numel()) * 4;
  total += static_cast<uint64_t>(plan.dims.vocab * plan.dims.hidden) * 4 * 2;  // head copy + embeddings.npy
  return total;
}

// What the manifest says of the export beyond the plan: the tool, the adapter,
// the model, the graph's annotations and the DFC names.
void describe_export(ExportManifest& manifest, const ExportRequest& r, const ResolvedModel& model,
                     const sdk::GraphBuilder& graph, const std::string& model_name, const std::string& scope) {
  const sdk::Checkpoint& ckpt = *model.checkpoint;
  manifest.llm2hef_version = LLM2HEF_SDK_VERSION;
  manifest.adapter = registry::resolution_json(model.resolution);
  manifest.model = {model_name, fs::absolute(r.model_dir).string(),
                    ckpt.config().raw().value("architectures", json::array()),
                    ckpt.config().find_string("model_type").value_or(""), checkpoint_parameters(ckpt)};
  for (const auto& [k, v] : graph.annotations()) manifest.graph_annotations[k] = v;
  manifest.dfc = {scope, r.calib_size, {scope + kPrefillGroupSuffix, scope + kTbtGroupSuffix}};
}

// How the resources are written: where, with how many threads and how the
// bytes reach the disk.
struct ResourceWrite {
  fs::path out;  // OUT: the kit's paths are relative to it
  unsigned threads;
  sdk::Writeback writeback;
};

// resources/: embeddings, theta, and the runtime's tokenizer.json and
// hailo-config.json; records the non-finite weights and the resource changes.
void write_resources(const ResourceWrite& w, const CheckpointReader& ckpt, const sdk::Plan& plan,
                     const ChatTemplate& chat_template, uint64_t graph_bytes, Progress& progress,
                     ExportManifest& manifest) {
  fs::create_directory((w.out / kit_path(KitFile::embeddings)).parent_path());
  progress.set_label("writing resources");
  stream_embeddings(ckpt, plan, w.out / kit_path(KitFile::embeddings), progress, graph_bytes, w.writeback, w.threads);
  write_npy(w.out / kit_path(KitFile::theta), {static_cast<int64_t>(plan.theta.size())}, plan.theta);
  // Every weight has been read by now (graph and embeddings).
  if (const std::vector<NonFiniteWeight> bad = ckpt.nonfinite_weights(); !bad.empty())
    manifest.nonfinite_weights = report_nonfinite(bad);
  std::vector<std::string> changes;
  // One DOM of tokenizer.json (its text is freed once parsed), edited in
  // place and serialized straight to the file: peak memory is that DOM.
  TokenizerFix tok = fix_tokenizer(sdk::read_json(ckpt.tokenizer_json(), sdk::JsonLimits::tokenizer()),
                                   ckpt.tokenizer_json().string(), plan.dims.vocab);
  changes.insert(changes.end(), tok.changes.begin(), tok.changes.end());
  write_json(w.out / kit_path(KitFile::tokenizer), tok.tokenizer);  // its strings were parsed, so valid UTF-8
  write_text(w.out / kit_path(KitFile::hailo_config),
             json_text(make_hailo_config(ckpt, plan, tok, chat_template, changes), 2) + "\n");
  manifest.resource_changes = changes;
}

// The DFC kit: model scripts and the three Python drivers, in the table's
// order; the table says which are executable.
void write_dfc_kit(const fs::path& dir, const std::string& scope, const sdk::Plan& plan, int64_t calib_size,
                   const ExportManifest& manifest) {
  for (const ExportKitFile& f : kExportKit) {
    std::string text;
    switch (f.file) {
      case KitFile::optimize_script: text = optimize_script(scope, plan, calib_size); break;
      case KitFile::compile_script: text = compile_script(scope); break;
      case KitFile::compile_driver: text = compile_driver(manifest); break;
      case KitFile::validate_script: text = validate_script(manifest); break;
      case KitFile::calibrate_script: text = calibrate_script(manifest); break;
      case KitFile::graph:
      case KitFile::weights:
      case KitFile::embeddings:
      case KitFile::theta:
      case KitFile::tokenizer:
      case KitFile::hailo_config:
      case KitFile::manifest: continue;  // written by the graph, resource and manifest steps
    }
    write_text(dir / f.path, text);
    if (f.executable)
      fs::permissions(dir / f.path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                      fs::perm_options::add);
  }
}

}  // namespace

ExportManifest export_model(const ExportRequest& r, const plugins::AdapterHost& host) {
  const ResolvedModel model = resolve_model(r, host);
  const CheckpointReader& ckpt = *model.checkpoint;
  const sdk::AdapterInfo& info = model.info();
  const sdk::ExportOptions options = export_options(r, model);
  std::vector<CommandInput> other_inputs;
  if (r.chat_template_file) other_inputs.push_back({"the chat template (--chat-template)", *r.chat_template_file, {}});
  check_export_output(r.output, r.model_dir, r.force, other_inputs);  // before any work: --force never deletes an input
  const sdk::Plan plan = plan_model(model, options);
  require_tokenizer_json(ckpt, r.model_dir);

  // The template is checked for what hailort cannot load before the long
  // graph write; the edits it gets are made with the resources, below.
  const ChatTemplate chat_template = chosen_chat_template(ckpt, r.chat_template_file);
  if (chat_template.text) refuse_what_hailort_cannot_parse(*chat_template.text, chat_template.origin);

  const std::string model_name = checkpoint_model_name(ckpt, r.model_dir);
  const std::string scope = dfc_scope_name(r.name.empty() ? model_name : r.name);
  const std::string name_note = dfc_name_note(r.name, scope);
  if (!name_note.empty()) spdlog::warn("{}", name_note);
  const std::vector<std::string> reading = ckpt.reading_notes();  // e.g. what reading a GGUF dequantized or assumed
  for (const auto& n : reading) spdlog::warn("{}", n);

  Progress progress("exporting " + model_name, bytes_to_export(ckpt, plan), r.progress);
  AtomicDir out(r.output, r.force, r.durable);
  const fs::path model_path = out.path() / kit_path(KitFile::graph);
  // A durable export is fsynced before its rename: start the disk writes as
  // the bytes come, so the disk works while the export computes.
  const sdk::Writeback writeback = r.durable ? sdk::Writeback::as_written : sdk::Writeback::deferred;
  sdk::GraphBuilder graph(
      scope, out.path() / kit_path(KitFile::weights), [&](uint64_t bytes) { progress.update(bytes); }, writeback,
      std::max(1u, r.threads));
  model.adapter().build_graph(ckpt, plan, graph);
  graph.save(model_path, {{"llm2hef.adapter", info.name + " " + info.version},
                          {"llm2hef.cache_size", std::to_string(plan.cache_size)}});

  ExportManifest manifest = manifest_for_plan(plan);
  describe_export(manifest, r, model, graph, model_name, scope);
  if (!name_note.empty()) manifest.notes.push_back(name_note);
  manifest.notes.insert(manifest.notes.end(), reading.begin(), reading.end());
  manifest.files = export_kit_manifest_files();
  check_graph_contract(model_path, manifest);

  write_resources({out.path(), std::max(1u, r.threads), writeback}, ckpt, plan, chat_template, graph.external_bytes(),
                  progress, manifest);
  write_dfc_kit(out.path(), scope, plan, r.calib_size, manifest);
  write_text(out.path() / kit_path(KitFile::manifest), manifest_text(manifest));
  progress.finish();
  out.commit();
  return manifest;
}

}  // namespace llm2hef::core
