#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "llm2hef/core/export.hpp"
#include "llm2hef/core/json_text.hpp"
#include "llm2hef/core/progress.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::cli {

namespace {
constexpr const char* kHelp = R"(Usage: llm2hef export MODEL_DIR -o OUT --cache N --prefill P [options]

Reads a Hugging Face checkpoint folder (config.json, safetensors, tokenizer)
and writes OUT/ atomically (nothing is left behind on failure):
  model.onnx, model.onnx.data     DFC-parsable graph, weights as external data
  resources/                      embeddings.npy, theta.npy, tokenizer.json, hailo-config.json
  optimize.alls, compile.alls     model scripts for the DFC
  compile.py                      the DFC driver (run it where the DFC is installed)
  manifest.json                   what was exported and how
The chat template is read from chat_template.jinja, else from
tokenizer_config.json's chat_template (one template, or the one named
"default" of a list). Every change made to the tokenizer or the template (a
BOS made literal, a decoder Strip removed, a base model's plain template, named
templates left out) is printed on stderr and recorded in manifest.json.

Options:
  -o, --output OUT        output folder (must not exist unless --force)
  --cache N               KV-cache size = the graph's sequence length (required)
  --prefill P             prefill chunk, prefill_input_tokens_count (required, <= N)
  --adapter NAME          use this adapter instead of resolving config.json
  --lm-head-shards K      split the lm_head into K equal outputs (default: adapter's choice)
  --name NAME             DFC network name (default: from the folder name)
  --calib-size N          calibset_size in optimize.alls (default 64)
  --json                  print the manifest as JSON on stdout
  --no-progress           never draw the progress bar
  --force                 replace OUT if it exists
  --refuse-nonfinite      fail on a NaN or Inf weight (default: warn, naming the tensor,
                          and record it in manifest.json under nonfinite_weights)
Adapter options (see `llm2hef adapters`), e.g. for gpt2: --gelu sigmoid|tanh
)";
}  // namespace

int cmd_export(const Globals& g, const std::vector<std::string>& argv) {
  Args args(argv, {"output", "cache", "prefill", "adapter", "lm-head-shards", "name", "calib-size"},
            {"json", "force", "no-progress", "refuse-nonfinite", "help", "h"}, /*allow_extra=*/true);
  if (args.has("help") || args.has("h")) {
    std::cout << kHelp;
    return 0;
  }
  if (args.positionals().size() != 1) throw UsageError("export takes one MODEL_DIR (see llm2hef export --help)");
  core::ExportRequest r;
  r.model_dir = args.positionals()[0];
  r.output = args.require("output");
  r.cache_size = args.require_int("cache");
  r.prefill = args.require_int("prefill");
  r.lm_head_shards = args.get_int("lm-head-shards").value_or(0);
  r.calib_size = args.get_int("calib-size").value_or(64);
  r.adapter = args.get("adapter");
  r.name = args.get("name").value_or("");
  r.force = args.has("force");
  r.refuse_nonfinite = args.has("refuse-nonfinite");
  r.adapter_options = args.extras();
  r.progress = !args.has("no-progress") && core::Progress::stderr_is_terminal();
  plugins::AdapterHost host = make_host(g);
  nlohmann::json manifest = core::export_model(r, host);
  // On stderr whatever the output form, so that a changed or substituted chat
  // template is never silent (--json keeps stdout parsable).
  const nlohmann::json changes = manifest.value("resource_changes", nlohmann::json::array());
  if (!changes.empty()) {
    std::cerr << "resource changes (also in manifest.json, resource_changes):\n";
    for (const auto& c : changes) std::cerr << "  - " << c.get<std::string>() << "\n";
  }
  if (args.has("json")) {
    std::cout << core::json_text(manifest, 2) << "\n";
  } else {
    std::cout << "exported " << manifest["model"]["name"].get<std::string>() << " with adapter "
              << manifest["adapter"]["name"].get<std::string>() << " to " << r.output.string() << "\n";
    for (const auto& rw : manifest["rewrites"]) std::cout << "  - " << rw.get<std::string>() << "\n";
    std::cout << "next: python " << (r.output / "compile.py").string()
              << " --calib-tokens FILE   (on the machine with Hailo's DFC)\n";
  }
  return 0;
}

}  // namespace llm2hef::cli
