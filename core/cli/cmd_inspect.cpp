#include <algorithm>
#include <iostream>

#include "commands.hpp"
#include "llm2hef/core/inspect/inspect.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/io/progress.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "model_argument.hpp"

namespace llm2hef::cli {

namespace {
constexpr const char* kHelp = R"(Usage: llm2hef inspect MODEL [--json] [--cache N] [--prefill P] [--adapter NAME]
                      [--chat-template FILE] [--plan quantization.json] [--gguf-file FILE]

Says what `export` would do with a checkpoint, without writing anything:
the adapter that claims it, parameter count, weight memory at A8W4 and
KV-cache memory for the cache size on the 8 GB Hailo-10H (estimates), the
lm_head split, the rewrites applied, and whatever is refused and why.
Also what export would change in the genai resources: where the chat template
comes from (chat_template.jinja before tokenizer_config.json, as transformers
reads them) and every change to the tokenizer and the template, including the
guards made inert for hailort's load probe (JSON:
"resources": {"chat_template_source", "changes"}). A resource problem that
would stop the export is reported there ("resources": {"error",
"exit_status"}). It also says what compile.py needs to calibrate the export:
the RAM of its optimize step and the largest cache its calibration inputs
allow, with a warning past it ("calibration"). And what decoding may reach:
tokens/s for llm2hef's default (weights at 4 bits), Hailo's own recipe
(lm_head at 8 bits), all weights at 8 bits and, with --plan, the plan, from
the bytes each generated token reads; upper bounds from the memory bandwidth
anchored on Qwen2-1.5B (JSON: "decode_speed"; docs/decode-speed.md).
Exit status: what `export` would end with: 4 when the model is refused, 3 or
4 when a resource problem would stop the export, else 0.

{options}
)";
}  // namespace

void add_inspect_command(CommandLine& cli) {
  struct Options {
    std::string model_dir, adapter, chat_template, plan, gguf_file;
    int64_t cache = 0, prefill = 0;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  static const std::string help = std::string(kHelp) + "\n" + kModelArgumentHelp;
  CLI::App* app = cli.add_command(cli.root(), "inspect", help.c_str(), [o](Invocation& inv) {
    core::InspectRequest r;
    const bool quiet = inv.globals().quiet;
    r.model_dir =
        model_argument(o->model_dir, {o->gguf_file, !quiet && core::Progress::stderr_is_terminal(), quiet, {}});
    if (inv.command().count("--cache")) r.cache_size = o->cache;
    if (inv.command().count("--prefill")) r.prefill = o->prefill;
    if (inv.command().count("--adapter")) r.adapter = o->adapter;
    if (!o->chat_template.empty()) r.chat_template_file = o->chat_template;
    if (!o->plan.empty()) r.precision_plan = o->plan;
    nlohmann::json report = core::inspect_model(r, inv.host());
    std::cout << (o->json ? core::json_text(report, 2) + "\n" : core::inspect_text(report));
    return core::inspect_exit_status(report);
  });
  app->add_option("MODEL", o->model_dir)->required();
  OptionRows& rows = cli.options(*app, 17);
  rows.add(app->add_option("--cache", o->cache), "N",
           "KV-cache size to size the cache for (default: the model's\n"
           "max_position_embeddings, or its sliding window, capped at 2048;\n"
           "the same rule as export)");
  rows.add(app->add_option("--prefill", o->prefill), "P", "prefill chunk (default 96, or the cache size if smaller)");
  rows.add(app->add_option("--adapter", o->adapter), "NAME",
           "use this adapter instead of resolving config.json (as\n"
           "export --adapter)");
  rows.add(app->add_option("--chat-template", o->chat_template), "FILE",
           "\n"
           "judge this Jinja template instead of the checkpoint's (as\n"
           "export --chat-template would use it)");
  rows.add(app->add_option("--plan", o->plan), "FILE",
           "quantization.json from `llm2hef calibrate`: adds what the\n"
           "plan costs (weights at 8 instead of 4 bits, activations at\n"
           "16 bits) to the estimate (JSON: \"precision_plan\") and\n"
           "its tokens/s to the decode speed");
  rows.add(app->add_option("--gguf-file", o->gguf_file), "FILE",
           "\n"
           "with a Hub id: inspect this GGUF file of the repository");
  rows.add(app->add_flag("--json", o->json), "", "machine-readable report");
}

}  // namespace llm2hef::cli
