#include <iostream>

#include "commands.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/registry/report.hpp"

namespace llm2hef::cli {

namespace {
constexpr const char* kHelp = R"(Usage: llm2hef adapters [--json] [-v|--verbose]

Lists the architecture adapters found: name, version, Hugging Face
architectures claimed, options, file, and the config keys that change the
forward pass each applies (docs/forward-keys.md; another adapter refuses
them). An architecture claimed by two adapters is listed with the one that
wins (found first in the search order; export warns and --adapter NAME
chooses another).

{options}
)";
}  // namespace

void add_adapters_command(CommandLine& cli) {
  struct Options {
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = cli.add_command(cli.root(), "adapters", kHelp, [o](Invocation& inv) {
    nlohmann::json report = registry::adapters_report(inv.host(), inv.globals().verbose);
    if (o->json)
      std::cout << core::json_text(report, 2) << "\n";
    else
      std::cout << registry::adapters_text(report);
    return 0;
  });
  OptionRows& rows = cli.options(*app, 14);
  rows.add(app->add_flag("--json", o->json), "", "machine-readable output");
  rows.add(app->get_option("--verbose"), "", "\nalso list every file considered and why it was skipped");
}

}  // namespace llm2hef::cli
