// llm2hef command-line entry point: logging, interrupt cleanup, the command tree.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "commands.hpp"
#include "llm2hef/core/io/staging.hpp"
#include "llm2hef/registry/temp_file.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace {

// stdout is a product for several commands (`registry collect DIR >
// index.json`, --json reports), and the C library buffers it: a full disk or
// a closed descriptor only shows when the buffer is flushed, after the
// command has returned. Flushed and checked here, so a lost result is never
// an exit 0: it becomes exit 3 (bad_input: the output could not be written,
// as for -o files). A command that already failed keeps its own status.
int finish_standard_output(int status) {
  std::cout.flush();
  const bool stream_failed = std::cout.fail();
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0 || std::ferror(stdout);
  const int error = errno;
  if (!stream_failed && !flush_failed) return status;
  std::cerr << "llm2hef: error: standard output: cannot write"
            << (error ? std::string(": ") + std::strerror(error) : std::string())
            << " (the result is lost or incomplete)\n";
  const int lost = static_cast<int>(llm2hef::ExitCode::bad_input);
  return status == 0 || status == static_cast<int>(llm2hef::ExitCode::failure) ? lost : status;
}

}  // namespace

int main(int argc, char** argv) {
  // Diagnostics go to stderr: stdout carries results (--json documents, reports).
  spdlog::set_default_logger(spdlog::stderr_color_mt("llm2hef"));
  spdlog::set_pattern("%^%l%$: %v");
  spdlog::set_level(spdlog::level::warn);
  // Before any thread starts: Ctrl-C and SIGTERM remove staging outputs.
  llm2hef::core::install_interrupt_cleanup();
  // The registry's temporary files and folders (registry install, keys add,
  // sign...) go the same way; that library sits below core.
  llm2hef::registry::set_interrupt_cleanup({&llm2hef::core::create_staging, &llm2hef::core::unregister_staging,
                                            &llm2hef::core::note_created_folders,
                                            &llm2hef::core::forget_created_folders});
  llm2hef::cli::CommandLine cli;
  llm2hef::cli::add_all_commands(cli);
  return finish_standard_output(cli.run(argc, argv));
}
