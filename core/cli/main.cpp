// llm2hef command-line entry point: dispatch, help, exit codes.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "llm2hef/core/staging.hpp"
#include "llm2hef/sdk/build_info.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace {

constexpr const char* kUsage = R"(llm2hef - bring Hugging Face LLMs to the Hailo-10H

Usage: llm2hef [--adapter-path DIR[:DIR...]] [--allow-unsafe-adapters] COMMAND [ARGS...]

Commands:
  adapters   list the architecture adapters found (--json, --verbose)
  export     checkpoint folder -> ONNX + genai resources + DFC scripts
  inputs     runtime-equivalent host inputs for a prompt (.npz)
  lint       check any ONNX against the Hailo-10H graph contract (--json)
  inspect    what an export would do: adapter, sizes, memory on the 8 GB device, rewrites
  har        DFC HAR files: inspect, fix (HN fixups), lines (model-script lines from the HN)
  hef        compiled HEFs: inspect, check (genai contract), set-config (new hailo-config.json)
  package    a checked HEF into hailo-ollama's model store (blob + manifest)
  registry   adapter manifests: verify a published adapter, write manifests and indexes

Global options:
  --adapter-path DIR   search DIR (or a .so file) for adapters first; repeatable
  --allow-unsafe-adapters
                       load adapters even from world-writable folders or files,
                       or files owned by another user (refused by default)
  -h, --help           this text; `llm2hef COMMAND --help` for a command
  --version            print the version

Adapters are searched in: --adapter-path, $LLM2HEF_ADAPTER_PATH, the install's
lib/llm2hef/adapters, then the build tree.
Exit status: 0 ok, 1 check failed, 2 usage, 3 bad input, 4 unsupported model, 5 internal error.
)";

}  // namespace

int main(int argc, char** argv) {
  // Diagnostics go to stderr: stdout carries results (--json documents, reports).
  spdlog::set_default_logger(spdlog::stderr_color_mt("llm2hef"));
  spdlog::set_pattern("%^%l%$: %v");
  spdlog::set_level(spdlog::level::warn);
  // Before any thread starts: Ctrl-C and SIGTERM remove staging outputs.
  llm2hef::core::install_interrupt_cleanup();
  std::vector<std::string> args(argv + 1, argv + argc);
  llm2hef::cli::Globals globals;
  try {
    // Global options come before the command.
    size_t i = 0;
    for (; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--adapter-path" || a.rfind("--adapter-path=", 0) == 0) {
        if (a == "--adapter-path") {
          if (i + 1 >= args.size()) throw llm2hef::UsageError("--adapter-path needs a value");
          globals.adapter_paths.push_back(args[++i]);
        } else {
          globals.adapter_paths.push_back(a.substr(std::string("--adapter-path=").size()));
        }
      } else if (a == "--allow-unsafe-adapters") {
        globals.allow_unsafe_adapters = true;
      } else if (a == "-h" || a == "--help") {
        std::cout << kUsage;
        return 0;
      } else if (a == "--version") {
        std::cout << "llm2hef " << LLM2HEF_SDK_VERSION << "\n";
        return 0;
      } else {
        break;
      }
    }
    if (i >= args.size()) {
      std::cerr << kUsage;
      return static_cast<int>(llm2hef::ExitCode::usage);
    }
    const std::string command = args[i];
    std::vector<std::string> rest(args.begin() + static_cast<long>(i) + 1, args.end());
    globals.argv0 = argv[0];
    if (command == "adapters") return llm2hef::cli::cmd_adapters(globals, rest);
    if (command == "export") return llm2hef::cli::cmd_export(globals, rest);
    if (command == "inputs") return llm2hef::cli::cmd_inputs(globals, rest);
    if (command == "lint") return llm2hef::cli::cmd_lint(globals, rest);
    if (command == "inspect") return llm2hef::cli::cmd_inspect(globals, rest);
    if (command == "registry") return llm2hef::cli::cmd_registry(globals, rest);
    if (command == "hef") return llm2hef::cli::cmd_hef(globals, rest);
    if (command == "har") return llm2hef::cli::cmd_har(globals, rest);
    if (command == "package") return llm2hef::cli::cmd_package(globals, rest);
    throw llm2hef::UsageError("unknown command '" + command + "' (see llm2hef --help)");
  } catch (const llm2hef::Error& e) {
    std::cerr << "llm2hef: error: " << e.what() << "\n";
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << "llm2hef: internal error: " << e.what() << "\n";
    return static_cast<int>(llm2hef::ExitCode::internal);
  }
}
