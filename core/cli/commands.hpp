// One registration function per command: each adds its CLI::App (options,
// positionals, help text) to the command line and says what runs when it is
// chosen. A run returns the process exit status and throws llm2hef::Error for
// failures the command line reports.
#pragma once

#include "command_line.hpp"

namespace llm2hef::cli {

void add_adapters_command(CommandLine& cli);
void add_calibrate_command(CommandLine& cli);
void add_export_command(CommandLine& cli);
void add_inputs_command(CommandLine& cli);
void add_lint_command(CommandLine& cli);
void add_inspect_command(CommandLine& cli);
void add_har_commands(CommandLine& cli);
void add_hef_commands(CommandLine& cli);
void add_package_command(CommandLine& cli);
void add_registry_commands(CommandLine& cli);

// Every command above, in the order of `llm2hef --help` (the binary and
// llm2hef_docgen, which writes the man pages and completions, share it).
void add_all_commands(CommandLine& cli);

}  // namespace llm2hef::cli
