#include "command_line.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <system_error>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "did_you_mean.hpp"
#include "llm2hef/core/export/model_plan.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/io/progress.hpp"
#include "llm2hef/core/io/staging.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/build_info.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef_commit.hpp"

namespace llm2hef::cli {

namespace {

constexpr const char* kUsage = R"(llm2hef - bring Hugging Face LLMs to the Hailo-10H

Usage: llm2hef [--adapter-path DIR[:DIR...]] [--allow-unsafe-adapters] COMMAND [ARGS...]

Commands:
  adapters   list the architecture adapters found (--json, --verbose)
  export     checkpoint folder -> ONNX + genai resources + DFC scripts
  inputs     runtime-equivalent host inputs for a prompt (.npz)
  calibrate  activation ranges, a precision plan and a quantization proxy of an export
  lint       check any ONNX against the Hailo-10H graph contract (--json)
  inspect    what an export would do: adapter, sizes, memory on the 8 GB device, rewrites
  har        DFC HAR files: inspect, fix (HN fixups), lines (model-script lines from the HN)
  hef        compiled HEFs: inspect, check (genai contract), set-config (new hailo-config.json)
  package    a checked HEF into hailo-ollama's model store (blob + manifest)
  registry   adapters from a signed index (search, install, uninstall), manifests, keys
  help       help COMMAND [SUB]: the help of a command (as COMMAND [SUB] --help)

Global options:
{options}

-q and -v are taken by every command too (`llm2hef export -q ...`).

Adapters are searched in: --adapter-path, $LLM2HEF_ADAPTER_PATH, the install's
lib/llm2hef/adapters, the build tree, then the user's folder
$XDG_DATA_HOME/llm2hef/adapters (~/.local/share/llm2hef/adapters), where
`registry install` puts adapters.
Exit status: 0 ok, 1 check failed, 2 usage, 3 bad input, 4 unsupported model, 5 internal error.
)";

constexpr const char* kHelpHelp = R"(Usage: llm2hef help [COMMAND [SUB]]

Prints the help of a command or subcommand, the same text as
`llm2hef COMMAND [SUB] --help`; without a COMMAND, the overview.
)";

std::string help_of(const CLI::App& app) {
  return app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
}

// The chosen command, deepest first chosen subcommand (root when none).
CLI::App* chosen(CLI::App& root) {
  CLI::App* app = &root;
  while (!app->get_subcommands().empty()) app = app->get_subcommands().front();
  return app;
}

std::vector<CLI::App*> subcommands_of(CLI::App& app) {
  return app.get_subcommands([](CLI::App*) { return true; });
}

std::vector<std::string> subcommand_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : subcommands_of(app)) names.push_back(sub->get_name());
  return names;
}

// Every spelling of every option of `app`, with its dashes.
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_positional()) continue;
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

bool looks_like_option(const std::string& arg) { return arg.size() > 1 && arg[0] == '-'; }

// "--cahce=64" -> "--cahce".
std::string option_spelling(const std::string& arg) { return arg.substr(0, arg.find('=')); }

std::string see_help(const CLI::App& app) { return "see " + command_path(app) + " --help"; }

std::string unknown_option_message(const std::string& spelling, const std::vector<std::string>& candidates,
                                   const CLI::App& app) {
  const auto near = closest_name(spelling, candidates);
  return "unknown option " + spelling + (near ? " (did you mean " + *near + "?)" : " (" + see_help(app) + ")");
}

// Why the arguments CLI11 left over at one level are refused, or nullopt.
// Unknown options come first: a misspelt option taking a value leaves that
// value behind as a stray positional.
std::string unknown_command_message(CLI::App& app, const std::string& arg) {
  const auto near = closest_name(arg, subcommand_names(app));
  const std::string what = app.get_parent() ? "unknown " + app.get_name() + " command" : "unknown command";
  return what + " '" + arg + "'" + (near ? " (did you mean " + *near + "? " : " (") + see_help(app) + ")";
}

std::optional<std::string> refuse(CLI::App& app, const std::vector<std::string>& leftovers, bool options_only) {
  // A misspelt command comes first: the options after it (`exprot MODEL -o x`)
  // are the command's, and unknown only because the command was not found.
  if (!subcommands_of(app).empty() && !leftovers.empty() && !looks_like_option(leftovers.front()))
    return unknown_command_message(app, leftovers.front());
  for (const auto& arg : leftovers)
    if (looks_like_option(arg)) return unknown_option_message(option_spelling(arg), option_names(app), app);
  if (options_only) return std::nullopt;
  for (const auto& arg : leftovers) {
    if (!subcommands_of(app).empty()) return unknown_command_message(app, arg);
    return "unexpected argument '" + arg + "' (" + see_help(app) + ")";
  }
  return std::nullopt;
}

// "llm2hef 0.1.0 (commit 1a2b3c4)" and the adapter ABI and build
// fingerprint an adapter must match (docs/plugin-abi.md).
std::string version_text() {
  return std::string("llm2hef ") + LLM2HEF_SDK_VERSION + " (commit " + LLM2HEF_COMMIT + ")\nadapter SDK: abi " +
         std::to_string(LLM2HEF_ADAPTER_ABI_VERSION) + ", build fingerprint " + LLM2HEF_BUILD_FINGERPRINT;
}

}  // namespace

std::string command_path(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* p = app.get_parent(); p; p = p->get_parent()) path = p->get_name() + " " + path;
  return path;
}

plugins::AdapterHost make_host(const Globals& g) {
  plugins::SearchOptions o;
  o.explicit_paths = g.adapter_paths;
  const std::filesystem::path exe = plugins::executable_path();
  o.install_dir = plugins::install_adapter_dir(exe, LLM2HEF_INSTALL_ADAPTER_SUBDIR);
  // The build tree's adapters are for the binary built there: an installed or
  // packaged llm2hef never loads adapters from where it happened to be built.
  std::error_code ec;
  if (!exe.empty() && std::filesystem::equivalent(exe.parent_path(), LLM2HEF_BUILD_BINARY_DIR, ec))
    o.build_dir = std::filesystem::path(LLM2HEF_BUILD_ADAPTER_DIR);
  o.user_dir = plugins::user_adapter_dir();
  o.allow_unsafe = g.allow_unsafe_adapters;
  plugins::AdapterHost host(std::move(o));
  host.discover();
  spdlog::info("{} adapter(s) loaded, {} file(s) considered (`llm2hef adapters -v` lists them)", host.adapters().size(),
               host.considered().size());
  // Other broken files wait for `adapters --verbose`; one that ended the
  // process loading it is worth a word whatever the command.
  for (const auto& c : host.considered())
    if (c.error == plugins::PluginLoadError::Reason::killed_process)
      std::cerr << "warning: adapter " << c.file.string() << " skipped: " << c.reason << "\n";
  return host;
}

const plugins::AdapterHost& Invocation::host() {
  if (!host_) host_.emplace(make_host(globals_));
  return *host_;
}

CommandLine::CommandLine() : root_(std::make_unique<CLI::App>("", "llm2hef")) {
  CLI::App& root = *root_;
  // Every command refuses leftovers itself, to suggest the option meant.
  root.allow_extras(true);
  // One command per level: a later word naming a command is an argument.
  root.require_subcommand(0, 1);
  // A repeated option: the last one wins.
  root.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  set_help_text(root, kUsage);
  OptionRows& rows = options(root, 23);
  rows.add(root.add_option("--adapter-path", globals_.adapter_paths)
               ->expected(1)
               ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll),
           "DIR", "search DIR (or a .so file) for adapters first; repeatable");
  rows.add(root.add_flag("--allow-unsafe-adapters", globals_.allow_unsafe_adapters), "",
           "\nload adapters even from world-writable folders or files,\n"
           "or files owned by another user (refused by default)");
  add_output_level_flags(root);
  rows.add(root.get_option("--quiet"), "", "print errors only (no warnings, no progress bar)");
  rows.add(root.get_option("--verbose"), "", "also print what is done, step by step");
  rows.add(root.get_help_ptr(), "", "this text; `llm2hef COMMAND --help` for a command");
  rows.add(root.set_version_flag("--version", version_text()), "",
           "print the version, the commit and the adapter SDK's\nABI and build fingerprint");
  CLI::App* help = root.add_subcommand("help", "");
  set_help_text(*help, kHelpHelp);
  help->add_option("TOPIC", help_topic_);
  add_output_level_flags(*help);
  entries_[help] = {[this](Invocation&) { return run_help(); }, false};
}

// Help texts are written by hand (they explain more than a list of options),
// so every app prints its own text instead of CLI11's generated one, with the
// rows of its options (OptionRows) where the text has its "{options}" line.
void CommandLine::set_help_text(CLI::App& app, const char* text) {
  app.formatter_fn([this, text](const CLI::App* a, std::string, CLI::AppFormatMode) {
    const auto it = rows_.find(a);
    if (it == rows_.end()) return std::string(text);
    return with_option_rows(text, *it->second);
  });
}

OptionRows& CommandLine::options(CLI::App& app, std::size_t column) {
  auto& rows = rows_[&app];
  if (!rows) rows = std::make_unique<OptionRows>(column);
  return *rows;
}

std::vector<std::string> CommandLine::undescribed_options() const {
  std::vector<std::string> out;
  std::vector<const CLI::App*> todo{root_.get()};
  while (!todo.empty()) {
    const CLI::App* app = todo.back();
    todo.pop_back();
    for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) todo.push_back(sub);
    const auto it = rows_.find(app);
    const std::vector<const CLI::Option*> described =
        it == rows_.end() ? std::vector<const CLI::Option*>{} : it->second->described();
    for (const CLI::Option* opt : app->get_options()) {
      if (opt->get_positional()) continue;
      if (std::find(described.begin(), described.end(), opt) != described.end()) continue;
      const bool everywhere = opt == app->get_help_ptr() || opt->check_lname("quiet") || opt->check_lname("verbose");
      if (app != root_.get() && everywhere) continue;
      out.push_back(command_path(*app) + " " + option_label(*opt));
    }
  }
  return out;
}

void CommandLine::add_output_level_flags(CLI::App& app) {
  app.add_flag("-q,--quiet", globals_.quiet);
  app.add_flag("-v,--verbose", globals_.verbose);
}

CLI::App* CommandLine::add_group(CLI::App& parent, const std::string& name, const char* help_text) {
  CLI::App* app = parent.add_subcommand(name, "");
  set_help_text(*app, help_text);
  add_output_level_flags(*app);
  return app;
}

CLI::App* CommandLine::add_command(CLI::App& parent, const std::string& name, const char* help_text, RunFunction run,
                                   bool takes_adapter_options) {
  CLI::App* app = parent.add_subcommand(name, "");
  set_help_text(*app, help_text);
  add_output_level_flags(*app);
  entries_[app] = {std::move(run), takes_adapter_options};
  return app;
}

// Leftovers are checked level by level (root, group, command). After a parse
// error only unknown options are reported (for a command taking adapter
// options, those no installed adapter declares): they are the likely cause,
// and CLI11's own message ("--cache is required") would hide the typo.
std::optional<std::string> CommandLine::leftover_error(bool after_parse_error) {
  for (CLI::App* app = root_.get();; app = app->get_subcommands().front()) {
    const auto it = entries_.find(app);
    const bool takes_adapter_options = it != entries_.end() && it->second.takes_adapter_options;
    if (!takes_adapter_options) {
      if (auto why = refuse(*app, app->remaining(), after_parse_error)) return why;
    } else if (after_parse_error) {
      // Throws for an option no installed adapter declares (`--verbose`).
      adapter_options(*app, split_adapter_arguments(app->remaining()), make_host(globals_));
    }
    if (app->get_subcommands().empty()) return std::nullopt;
  }
}

int CommandLine::run_help() {
  CLI::App* app = root_.get();
  for (const auto& word : help_topic_) {
    CLI::App* next = nullptr;
    for (CLI::App* sub : subcommands_of(*app))
      if (sub->get_name() == word) next = sub;
    if (!next) {
      std::string topic;
      for (const auto& w : help_topic_) topic += (topic.empty() ? "" : " ") + w;
      const auto near = closest_name(word, subcommand_names(*app));
      throw UsageError("no help for '" + topic + "': " + command_path(*app) + " has no command '" + word + "'" +
                       (near ? " (did you mean " + *near + "?)" : ""));
    }
    app = next;
  }
  std::cout << help_of(*app);
  return 0;
}

int CommandLine::dispatch() {
  if (auto why = leftover_error(false)) throw UsageError(*why);
  if (globals_.quiet && globals_.verbose) throw UsageError("-q (--quiet) and -v (--verbose) contradict: give one");
  if (globals_.quiet) {
    spdlog::set_level(spdlog::level::err);
    core::Progress::disable_all();
  }
  if (globals_.verbose) spdlog::set_level(spdlog::level::info);
  CLI::App* app = chosen(*root_);
  const auto it = entries_.find(app);
  if (it == entries_.end()) {  // no command, or a group without its subcommand
    std::cerr << help_of(*app);
    return static_cast<int>(ExitCode::usage);
  }
  Invocation invocation(*app, globals_,
                        it->second.takes_adapter_options ? app->remaining() : std::vector<std::string>{});
  return it->second.run(invocation);
}

namespace {

const char* exit_kind(ExitCode code) {
  switch (code) {
    case ExitCode::ok: return "ok";
    case ExitCode::failure: return "check_failed";
    case ExitCode::usage: return "usage";
    case ExitCode::bad_input: return "bad_input";
    case ExitCode::unsupported: return "unsupported";
    case ExitCode::internal: return "internal";
  }
  return "internal";
}

// With --json anywhere on the command line, a failure is also a JSON object
// on stdout (scripts parse stdout; the message stays on stderr for people).
// "ok" is the one word for success in every --json report (false here).
void report_error(bool json, ExitCode code, const std::string& raw_message, const char* prefix) {
  const std::string message = core::name_outputs_by_target(raw_message);
  std::cerr << "llm2hef: " << prefix << message << "\n";
  if (json)
    std::cout << core::json_text(nlohmann::json{{"ok", false},
                                                {"error",
                                                 {{"message", message},
                                                  {"exit_status", static_cast<int>(code)},
                                                  {"kind", exit_kind(code)}}}},
                                 2)
              << "\n";
}

// CLI11's "Could not convert: --cache = abc" in the tool's words: the
// option, the value given, what it takes, where to look.
std::string conversion_message(const CLI::App& app, const std::string& raw) {
  const std::string prefix = "Could not convert: ";
  const size_t eq = raw.find(" = ");
  if (raw.rfind(prefix, 0) != 0 || eq == std::string::npos) return raw + " (" + see_help(app) + ")";
  const std::string name = raw.substr(prefix.size(), eq - prefix.size());
  const std::string value = raw.substr(eq + 3);
  std::string expected = "a value of another kind";
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_name() != name && opt->get_name(false, true) != name) continue;
    const std::string type = opt->get_type_name();
    if (type == "INT" || type == "UINT")
      expected = "a whole number";
    else if (type == "FLOAT")
      expected = "a number";
    else if (!type.empty())
      expected = "a value of type " + type;
  }
  return name + ": '" + value + "' is not " + expected + " (" + see_help(app) + ")";
}

}  // namespace

int CommandLine::run(int argc, char** argv) {
  const bool json =
      std::any_of(argv + std::min(argc, 1), argv + argc, [](const char* a) { return std::string(a) == "--json"; });
  try {
    try {
      root_->parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return root_->exit(e);  // the chosen command's help, on stdout
    } catch (const CLI::CallForVersion& e) {
      return root_->exit(e);
    } catch (const CLI::ConversionError& e) {
      if (auto why = leftover_error(true)) throw UsageError(*why);
      throw UsageError(conversion_message(*chosen(*root_), e.what()));
    } catch (const CLI::ParseError& e) {
      if (auto why = leftover_error(true)) throw UsageError(*why);
      throw UsageError(std::string(e.what()) + " (" + see_help(*chosen(*root_)) + ")");
    }
    return dispatch();
  } catch (const Error& e) {
    report_error(json, e.code(), e.what(), "error: ");
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    report_error(json, ExitCode::internal, e.what(), "internal error: ");
    return static_cast<int>(ExitCode::internal);
  }
}

AdapterArguments split_adapter_arguments(const std::vector<std::string>& leftovers) {
  AdapterArguments out;
  for (std::size_t i = 0; i < leftovers.size(); ++i) {
    const std::string& arg = leftovers[i];
    if (!looks_like_option(arg)) {
      out.positionals.push_back(arg);
      continue;
    }
    const std::string name = option_spelling(arg);
    std::optional<std::string> value;
    if (name.size() < arg.size())
      value = arg.substr(name.size() + 1);
    else if (i + 1 < leftovers.size() && !looks_like_option(leftovers[i + 1]))
      value = leftovers[++i];
    out.options.emplace_back(name, value);
  }
  return out;
}

std::map<std::string, std::string> adapter_options(const CLI::App& command, const AdapterArguments& args,
                                                   const plugins::AdapterHost& host) {
  std::vector<std::string> declared;  // "--gelu", by any installed adapter
  for (const auto& adapter : host.adapters())
    for (const auto& spec : adapter.info().options) declared.push_back("--" + spec.name);
  // The options to list when one is refused: those of the adapter that
  // handles MODEL when it can be told, else every adapter's.
  const auto listing = [&]() -> std::string {
    if (args.positionals.size() == 1) {
      try {
        core::PlanRequest probe;
        probe.model_dir = args.positionals[0];
        const CLI::Option* forced = command.get_option_no_throw("--adapter");
        if (forced && forced->count() > 0) probe.adapter = forced->as<std::string>();
        const core::ResolvedModel model = core::resolve_model(probe, host);
        std::string own;
        for (const auto& spec : model.info().options) own += (own.empty() ? "--" : ", --") + spec.name;
        return "options of adapter " + model.info().name + ", which handles " + args.positionals[0] + ": " +
               (own.empty() ? "none" : own);
      } catch (const std::exception&) {
        // Not a model an adapter takes: the export itself will say why.
      }
    }
    std::string all;  // "--gelu (gpt2)"
    for (const auto& adapter : host.adapters())
      for (const auto& spec : adapter.info().options)
        all += (all.empty() ? "" : ", ") + ("--" + spec.name) + " (" + adapter.info().name + ")";
    return "adapter options: " + (all.empty() ? std::string("none installed") : all);
  };
  std::map<std::string, std::string> out;
  for (const auto& [spelling, value] : args.options) {
    const bool is_declared =
        spelling.rfind("--", 0) == 0 && std::find(declared.begin(), declared.end(), spelling) != declared.end();
    if (!is_declared) {
      std::vector<std::string> candidates = option_names(command);
      candidates.insert(candidates.end(), declared.begin(), declared.end());
      const auto near = closest_name(spelling, candidates);
      throw UsageError("unknown option " + spelling +
                       (near ? " (did you mean " + *near + "?)" : " (" + see_help(command) + "; " + listing() + ")"));
    }
    if (!value) throw UsageError("option " + spelling + " needs a value");
    out[spelling.substr(2)] = *value;
  }
  return out;
}

}  // namespace llm2hef::cli
