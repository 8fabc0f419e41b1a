#include <sched.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "llm2hef/core/export/export_kit.hpp"
#include "llm2hef/core/export/export_pipeline.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/io/output_guard.hpp"
#include "llm2hef/core/io/progress.hpp"
#include "llm2hef/core/runtime/host_inputs.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "model_argument.hpp"

namespace llm2hef::cli {

namespace {
constexpr const char* kHelpBeforeKit = R"(Usage: llm2hef export MODEL -o OUT [--cache N] [--prefill P] [options]

Reads a Hugging Face checkpoint (config.json, safetensors, tokenizer: a
folder or a Hub id, see MODEL below) or a GGUF file (.gguf: F32, F16, BF16,
Q8_0 and the other types it dequantizes; docs/gguf.md) and writes OUT/
atomically (nothing is left behind on failure):
)";
// Then the kit's files (core/export/export_kit.hpp), then:
constexpr const char* kHelpAfterKit = R"(The chat template is read from chat_template.jinja, else from
tokenizer_config.json's chat_template (one template, or the one named
"default" of a list), or from --chat-template FILE. It is made fit for how
hailort renders it: hailort renders it once when it loads the model, with one
message of role "TMP", and does not load a model whose template raises, so
raise_exception guards are made inert (every conversation the template
accepted renders exactly as before); bos_token and eos_token, which the
runtime renders empty, are made literal. A template using what hailort's
minja cannot parse ({% call %}) is refused before anything is written
(exit 4; docs/chat-templates.md). Every change made to the tokenizer or the
template (guards made inert, BOS and EOS made literal, a decoder Strip
removed, a base model's plain template, named templates left out) is printed
on stderr and recorded in manifest.json.

Options:
{options}
Adapter options (see `llm2hef adapters`), e.g. for gpt2: --gelu sigmoid|tanh,
as --name value or --name=value anywhere after `export`; accepted only when
the adapter that handles MODEL declares them. Any other option is refused.
)";
constexpr int64_t kMaxThreads = 256;

// The cores this process may run on (its affinity mask, which taskset and
// container CPU sets narrow), at most 4: conversion runs beside a writer
// thread whose copy into the page cache takes a core of its own, and on the
// 2-core machine this was measured on, 2 threads gained over 1 (issue 31);
// more than 4 could not be measured there, so they are not the default
// (--threads asks for them).
unsigned default_threads() {
  unsigned n = 0;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) n = static_cast<unsigned>(CPU_COUNT(&set));
#endif
  if (n == 0) n = std::thread::hardware_concurrency();
  return std::clamp(n, 1u, 4u);
}

struct Options {
  std::string output, adapter, name, chat_template, gguf_file;
  int64_t cache = 0, prefill = 0, lm_head_shards = 0, calib_size = 64;
  bool json = false, force = false, no_progress = false, refuse_nonfinite = false, no_sync = false;
  int64_t threads = 0;
};

// The export's request: MODEL resolved (a Hub id fetched, once the output is
// known to be writable), every option checked.
core::ExportRequest export_request(const Options& o, Invocation& inv) {
  const AdapterArguments extra = split_adapter_arguments(inv.leftovers());
  // Both required arguments are named at once: a newcomer typing
  // `llm2hef export` learns the whole command, not one half of it.
  if (extra.positionals.empty() && o.output.empty())
    throw UsageError("export needs MODEL and -o OUT: llm2hef export MODEL -o OUT (see llm2hef export --help)");
  if (extra.positionals.empty())
    throw UsageError("export needs MODEL, the checkpoint to export: llm2hef export MODEL -o " + o.output);
  if (o.output.empty()) throw UsageError("export needs -o OUT, the folder to write: llm2hef export MODEL -o OUT");
  core::ExportRequest r;
  r.adapter_options = adapter_options(inv.command(), extra, inv.host());
  if (extra.positionals.size() != 1) throw UsageError("export takes one MODEL (see llm2hef export --help)");
  const bool progress = !o.no_progress && !inv.globals().quiet && core::Progress::stderr_is_terminal();
  ModelArgumentOptions model_options{o.gguf_file, progress, inv.globals().quiet, {}};
  model_options.before_fetch = [&](const std::filesystem::path& repo_cache) {
    std::vector<core::CommandInput> inputs;
    if (!o.chat_template.empty()) inputs.push_back({"the chat template (--chat-template)", o.chat_template, {}});
    core::check_export_output(o.output, repo_cache, o.force, inputs);
  };
  r.model_dir = model_argument(extra.positionals[0], model_options);
  r.output = o.output;
  if (inv.command().count("--cache")) r.cache_size = o.cache;
  if (inv.command().count("--prefill")) r.prefill = o.prefill;
  r.lm_head_shards = o.lm_head_shards;
  r.calib_size = o.calib_size;
  if (inv.command().count("--adapter")) r.adapter = o.adapter;
  r.name = o.name;
  if (!o.chat_template.empty()) r.chat_template_file = o.chat_template;
  r.force = o.force;
  r.refuse_nonfinite = o.refuse_nonfinite;
  r.durable = !o.no_sync;
  if (inv.command().count("--threads")) {
    if (o.threads < 1 || o.threads > kMaxThreads)
      throw UsageError("--threads " + std::to_string(o.threads) + ": expected a number of threads from 1 to " +
                       std::to_string(kMaxThreads));
    r.threads = static_cast<unsigned>(o.threads);
  } else {
    r.threads = default_threads();
  }
  r.progress = progress;
  return r;
}

// What export says once it is done: the resource changes on stderr, then
// the manifest (--json) or a summary and the next steps.
void report_export(const Options& o, const core::ExportManifest& manifest, const std::filesystem::path& output,
                   bool quiet) {
  // On stderr whatever the output form, so that a changed or substituted chat
  // template is never silent (--json keeps stdout parsable) unless -q asks
  // for errors only (manifest.json keeps them).
  if (!manifest.resource_changes.empty() && !quiet) {
    std::cerr << "resource changes (also in manifest.json, resource_changes):\n";
    for (const std::string& c : manifest.resource_changes) std::cerr << "  - " << c << "\n";
  }
  // compile.py calibrates with `llm2hef inputs`, whose tensors have a
  // limit: said now rather than hours later on the DFC machine.
  const sdk::RuntimeSizes sizes{manifest.cache_size,   manifest.dims.hidden, manifest.dims.heads,
                                manifest.theta_length, manifest.pe_q_tiles,  manifest.pe_k_tiles};
  if (auto why = core::calibration_limit_warning(sizes, manifest.dfc.calib_size)) spdlog::warn("{}", *why);
  for (const auto& [file, what] : manifest.files) spdlog::info("wrote {}: {}", (output / file).string(), what);
  if (o.json) {
    std::cout << core::json_text(core::manifest_json(manifest), 2) << "\n";
  } else if (!quiet) {
    std::cout << "exported " << manifest.model.name << " with adapter " << manifest.adapter_name() << " to "
              << output.string() << " (cache " << manifest.cache_size << ", prefill " << manifest.prefill << ")\n";
    for (const std::string& rw : manifest.rewrites) std::cout << "  - " << rw << "\n";
    // What the adapter says is unproven or approximate belongs where the
    // export is made, not only in manifest.json (issue 37).
    for (const std::string& note : manifest.notes) std::cout << "  note: " << note << "\n";
    // calibrate comes first: its plan is what keeps a model from
    // collapsing at the default A8W4 (docs/quantization.md), and
    // compile.py applies the quantization.json it writes by itself.
    std::cout << "next: llm2hef calibrate " << output.string()
              << " --calib-chat FILE   (FILE: conversations, one JSON list of {\"role\", \"content\"} per "
                 "line; or --calib-text FILE; writes quantization.json, the precision plan compile.py "
                 "applies)\n"
              << "then: python " << (output / "compile.py").string()
              << " --calib-chat FILE   (on the machine with Hailo's DFC; see compile.py --help)\n";
  }
}

int run_export(const Options& o, Invocation& inv) {
  const core::ExportRequest r = export_request(o, inv);
  const core::ExportManifest manifest = core::export_model(r, inv.host());
  report_export(o, manifest, r.output, inv.globals().quiet);
  return 0;
}

void add_export_options(OptionRows& rows, CLI::App& app, Options& o) {
  // Checked in the callback, with MODEL (CLI11 would name only -o).
  rows.add(app.add_option("-o,--output", o.output), "OUT", "output folder (must not exist unless --force)");
  rows.add(app.add_option("--cache", o.cache), "N",
           "KV-cache size = the graph's sequence length (default: the\n"
           "model's max_position_embeddings, its largest exact cache\n"
           "(learned positions, LongRoPE) or its sliding window,\n"
           "capped at 2048 as Hailo's own models; inspect uses the same)");
  rows.add(app.add_option("--prefill", o.prefill), "P",
           "prefill chunk, prefill_input_tokens_count (<= N; default 96,\nor N when smaller)");
  rows.add(app.add_option("--adapter", o.adapter), "NAME", "use this adapter instead of resolving config.json");
  rows.add(app.add_option("--lm-head-shards", o.lm_head_shards), "K",
           "split the lm_head into K equal outputs (default: adapter's choice)");
  rows.add(app.add_option("--name", o.name), "NAME", "DFC network name (default: from the folder name)");
  rows.add(app.add_option("--calib-size", o.calib_size), "N",
           "calibset_size in optimize.alls (default " + std::to_string(o.calib_size) + ")");
  rows.add(app.add_option("--chat-template", o.chat_template), "FILE",
           "the Jinja chat template the runtime gets, in place of the\ncheckpoint's (checked and edited the same way)");
  rows.add(app.add_option("--gguf-file", o.gguf_file), "FILE",
           "with a Hub id: export this GGUF file of the repository");
  rows.add(app.add_flag("--json", o.json), "", "print the manifest as JSON on stdout");
  rows.add(app.add_flag("--no-progress", o.no_progress), "", "never draw the progress bar");
  rows.add(app.add_flag("--force", o.force), "", "replace OUT if it exists");
  rows.add(app.add_flag("--refuse-nonfinite", o.refuse_nonfinite), "",
           "fail on a NaN or Inf weight (default: warn, naming the tensor,\n"
           "and record it in manifest.json under nonfinite_weights)");
  rows.add(app.add_flag("--no-sync", o.no_sync), "",
           "do not flush OUT to the disk before it is renamed into place\n"
           "(faster on slow disks; a power cut may then leave truncated files)");
  rows.add(app.add_option("--threads", o.threads), "N",
           "threads converting the weights, 1.." + std::to_string(kMaxThreads) +
               " (default: the cores this\n"
               "process may use, at most 4); the output is the same byte for byte\n"
               "whatever N, and so is the memory used");
}

}  // namespace

// Adapter options (`--gelu tanh`) cannot be CLI11 options: which adapter
// handles MODEL is known only once its config.json (or --adapter) is read.
// So export declares no positional and lets CLI11 leave whatever it does not
// know, in order; split_adapter_arguments() takes MODEL and the
// `--name value` pairs from that, adapter_options() refuses names no installed
// adapter declares (with a suggestion), and the export pipeline, once it has
// resolved the adapter, refuses names that adapter does not declare and
// values outside its declared choices.
void add_export_command(CommandLine& cli) {
  auto o = std::make_shared<Options>();
  // 80 columns, as the rest of the help text.
  static const std::string help =
      std::string(kHelpBeforeKit) + core::export_kit_help(80) + kHelpAfterKit + "\n" + kModelArgumentHelp;
  CLI::App* app = cli.add_command(
      cli.root(), "export", help.c_str(), [o](Invocation& inv) { return run_export(*o, inv); },
      /*takes_adapter_options=*/true);
  add_export_options(cli.options(*app, 26), *app, *o);
}

}  // namespace llm2hef::cli
