// One function per subcommand; each returns the process exit status and
// throws llm2hef::Error for failures main() reports.
#pragma once

#include <string>
#include <vector>

#include "llm2hef/plugins/host.hpp"

namespace llm2hef::cli {

struct Globals {
  std::vector<std::string> adapter_paths;
  bool allow_unsafe_adapters = false;  // --allow-unsafe-adapters
  std::string argv0;
};

// The adapter host with the documented search order, already discovered.
plugins::AdapterHost make_host(const Globals& g);

int cmd_adapters(const Globals& g, const std::vector<std::string>& args);
int cmd_export(const Globals& g, const std::vector<std::string>& args);
int cmd_inputs(const Globals& g, const std::vector<std::string>& args);
int cmd_lint(const Globals& g, const std::vector<std::string>& args);
int cmd_inspect(const Globals& g, const std::vector<std::string>& args);
int cmd_registry(const Globals& g, const std::vector<std::string>& args);
int cmd_hef(const Globals& g, const std::vector<std::string>& args);
int cmd_har(const Globals& g, const std::vector<std::string>& args);
int cmd_package(const Globals& g, const std::vector<std::string>& args);

}  // namespace llm2hef::cli
