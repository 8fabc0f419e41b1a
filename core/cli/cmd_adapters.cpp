#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "llm2hef/core/json_text.hpp"
#include "llm2hef/registry/report.hpp"

namespace llm2hef::cli {

plugins::AdapterHost make_host(const Globals& g) {
  plugins::SearchOptions o;
  o.explicit_paths = g.adapter_paths;
  o.install_dir = plugins::install_adapter_dir(plugins::executable_path(), LLM2HEF_INSTALL_ADAPTER_SUBDIR);
  o.build_dir = std::filesystem::path(LLM2HEF_BUILD_ADAPTER_DIR);
  o.allow_unsafe = g.allow_unsafe_adapters;
  plugins::AdapterHost host(std::move(o));
  host.discover();
  // Other broken files wait for `adapters --verbose`; one that ended the
  // process loading it is worth a word whatever the command.
  for (const auto& c : host.considered())
    if (c.error == plugins::PluginLoadError::Reason::killed_process)
      std::cerr << "warning: adapter " << c.file.string() << " skipped: " << c.reason << "\n";
  return host;
}

namespace {
constexpr const char* kHelp = R"(Usage: llm2hef adapters [--json] [--verbose]

Lists the architecture adapters found: name, version, Hugging Face
architectures claimed, options and file. An architecture claimed by two
adapters is listed with the one that wins (found first in the search order;
export warns and --adapter NAME chooses another).

  --json      machine-readable output
  --verbose   also list every file considered and why it was skipped
)";
}  // namespace

int cmd_adapters(const Globals& g, const std::vector<std::string>& argv) {
  Args args(argv, {}, {"json", "verbose", "help", "h"});
  if (args.has("help") || args.has("h")) {
    std::cout << kHelp;
    return 0;
  }
  plugins::AdapterHost host = make_host(g);
  nlohmann::json report = registry::adapters_report(host, args.has("verbose"));
  if (args.has("json"))
    std::cout << core::json_text(report, 2) << "\n";
  else
    std::cout << registry::adapters_text(report);
  return 0;
}

}  // namespace llm2hef::cli
