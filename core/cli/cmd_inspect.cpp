#include <algorithm>
#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "llm2hef/core/inspect.hpp"
#include "llm2hef/core/json_text.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::cli {

namespace {
constexpr const char* kHelp = R"(Usage: llm2hef inspect MODEL_DIR [--json] [--cache N] [--prefill P] [--adapter NAME]

Says what `export` would do with a checkpoint, without writing anything:
the adapter that claims it, parameter count, weight memory at A8W4 and
KV-cache memory for the cache size on the 8 GB Hailo-10H (estimates), the
lm_head split, the rewrites applied, and whatever is refused and why.
Also what export would change in the genai resources: where the chat template
comes from (chat_template.jinja before tokenizer_config.json, as transformers
reads them) and every change to the tokenizer and the template (JSON:
"resources": {"chat_template_source", "changes"}). A resource problem that
would stop the export is reported there ("resources": {"error"}) and does not
change the exit status.
Exit status 4 when the model is refused.

  --cache N      KV-cache size to size the cache for (default 2048)
  --prefill P    prefill chunk (default 96, or the cache size if smaller)
  --json         machine-readable report
)";
}  // namespace

int cmd_inspect(const Globals& g, const std::vector<std::string>& argv) {
  Args args(argv, {"cache", "prefill", "adapter"}, {"json", "help", "h"});
  if (args.has("help") || args.has("h")) {
    std::cout << kHelp;
    return 0;
  }
  if (args.positionals().size() != 1) throw UsageError("inspect takes one MODEL_DIR (see llm2hef inspect --help)");
  core::InspectRequest r;
  r.model_dir = args.positionals()[0];
  r.cache_size = args.get_int("cache").value_or(2048);
  r.prefill = args.get_int("prefill").value_or(std::min<int64_t>(96, r.cache_size));
  r.adapter = args.get("adapter");
  plugins::AdapterHost host = make_host(g);
  nlohmann::json report = core::inspect_model(r, host);
  std::cout << (args.has("json") ? core::json_text(report, 2) + "\n" : core::inspect_text(report));
  return report["supported"].get<bool>() ? 0 : static_cast<int>(ExitCode::unsupported);
}

}  // namespace llm2hef::cli
