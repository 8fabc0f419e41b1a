// The command tree: one list, shared by llm2hef and llm2hef_docgen.
#include "commands.hpp"

namespace llm2hef::cli {

void add_all_commands(CommandLine& cli) {
  // In the order of `llm2hef --help`.
  add_adapters_command(cli);
  add_export_command(cli);
  add_inputs_command(cli);
  add_calibrate_command(cli);
  add_lint_command(cli);
  add_inspect_command(cli);
  add_har_commands(cli);
  add_hef_commands(cli);
  add_package_command(cli);
  add_registry_commands(cli);
}

}  // namespace llm2hef::cli
