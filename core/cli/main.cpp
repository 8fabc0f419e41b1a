// llm2hef command-line entry point: logging, interrupt cleanup, the command tree.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "llm2hef/core/io/staging.hpp"

int main(int argc, char** argv) {
  // Diagnostics go to stderr: stdout carries results (--json documents, reports).
  spdlog::set_default_logger(spdlog::stderr_color_mt("llm2hef"));
  spdlog::set_pattern("%^%l%$: %v");
  spdlog::set_level(spdlog::level::warn);
  // Before any thread starts: Ctrl-C and SIGTERM remove staging outputs.
  llm2hef::core::install_interrupt_cleanup();
  llm2hef::cli::CommandLine cli;
  // In the order of `llm2hef --help`.
  llm2hef::cli::add_adapters_command(cli);
  llm2hef::cli::add_export_command(cli);
  llm2hef::cli::add_inputs_command(cli);
  llm2hef::cli::add_calibrate_command(cli);
  llm2hef::cli::add_lint_command(cli);
  llm2hef::cli::add_inspect_command(cli);
  llm2hef::cli::add_har_commands(cli);
  llm2hef::cli::add_hef_commands(cli);
  llm2hef::cli::add_package_command(cli);
  llm2hef::cli::add_registry_commands(cli);
  return cli.run(argc, argv);
}
