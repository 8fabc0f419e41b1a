// The command tree on CLI11: global options, one CLI::App per command and
// subcommand, each with its own help text, `llm2hef help COMMAND [SUB]`, exit
// codes, and the refusal of every argument a command does not declare (with a
// "did you mean" for near misses).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "llm2hef/plugins/host.hpp"
#include "option_rows.hpp"

namespace llm2hef::cli {

// Options given before the command.
struct Globals {
  std::vector<std::string> adapter_paths;  // --adapter-path, repeatable
  bool allow_unsafe_adapters = false;      // --allow-unsafe-adapters
  // -q/--quiet (errors only) and -v/--verbose (also what is done, step by
  // step), taken by every command and before it.
  bool quiet = false, verbose = false;
};

// The adapter host with the documented search order, already discovered.
plugins::AdapterHost make_host(const Globals& g);

// What a command's run function gets besides the options it bound itself.
class Invocation {
 public:
  Invocation(const CLI::App& command, const Globals& globals, std::vector<std::string> leftovers)
      : command_(command), globals_(globals), leftovers_(std::move(leftovers)) {}
  // The parsed command (to ask CLI11 whether an option was given).
  const CLI::App& command() const { return command_; }
  const Globals& globals() const { return globals_; }
  // Discovered on first use and kept, so a command asking twice loads once.
  const plugins::AdapterHost& host();
  // Only for a command added with takes_adapter_options: the arguments CLI11
  // did not recognise, in command-line order (its positionals among them).
  const std::vector<std::string>& leftovers() const { return leftovers_; }

 private:
  const CLI::App& command_;
  const Globals& globals_;
  std::vector<std::string> leftovers_;
  std::optional<plugins::AdapterHost> host_;
};

using RunFunction = std::function<int(Invocation&)>;

class CommandLine {
 public:
  CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  CLI::App& root() { return *root_; }

  // A command that only groups subcommands (har, hef, registry). Given
  // without one, it prints its help on stderr and exits 2.
  CLI::App* add_group(CLI::App& parent, const std::string& name, const char* help_text);

  // A command that runs `run` once its arguments are parsed. Anything CLI11
  // does not recognise is refused before `run` starts, unless
  // `takes_adapter_options`: then it is handed to `run` (Invocation::leftovers)
  // to be matched against the adapters' declared options.
  CLI::App* add_command(CLI::App& parent, const std::string& name, const char* help_text, RunFunction run,
                        bool takes_adapter_options = false);

  // The option rows of `app`'s help (column: where their text starts); its
  // help text holds them at its "{options}" line. The first call creates them.
  OptionRows& options(CLI::App& app, std::size_t column);

  // "llm2hef har fix --output" for every option the parser takes that no
  // help row describes (-h, -q and -v excepted below the top level, where
  // `llm2hef --help` describes them for every command). llm2hef_docgen
  // fails the build on any.
  std::vector<std::string> undescribed_options() const;

  // Parses argv and runs the chosen command; returns the process exit status.
  // Errors are reported on stderr as "llm2hef: error: ...".
  int run(int argc, char** argv);

 private:
  struct Entry {
    RunFunction run;
    bool takes_adapter_options = false;
  };
  int dispatch();
  void set_help_text(CLI::App& app, const char* text);
  void add_output_level_flags(CLI::App& app);
  int run_help();
  std::optional<std::string> leftover_error(bool after_parse_error);

  std::unique_ptr<CLI::App> root_;
  Globals globals_;
  std::vector<std::string> help_topic_;  // `llm2hef help COMMAND [SUB]`
  std::map<const CLI::App*, Entry> entries_;
  std::map<const CLI::App*, std::unique_ptr<OptionRows>> rows_;
};

// "llm2hef har fix": the command path of an app, for messages.
std::string command_path(const CLI::App& app);

// Splits the leftovers of a command that takes adapter options into its
// positionals and `--name value` / `--name=value` pairs. A name followed by
// nothing or by another option gets no value, so an unknown `--verbose`
// never swallows the `-o` after it.
struct AdapterArguments {
  std::vector<std::string> positionals;
  std::vector<std::pair<std::string, std::optional<std::string>>> options;  // name without dashes
};
AdapterArguments split_adapter_arguments(const std::vector<std::string>& leftovers);

// Refuses options no installed adapter declares (suggesting the closest of
// the command's own options and every adapter option) and declared ones
// without a value; returns the rest as name -> value. Whether the adapter
// that export resolves declares them, and whether the value is one of the
// declared choices, is checked where the adapter is resolved (core export).
std::map<std::string, std::string> adapter_options(const CLI::App& command, const AdapterArguments& args,
                                                   const plugins::AdapterHost& host);

}  // namespace llm2hef::cli
