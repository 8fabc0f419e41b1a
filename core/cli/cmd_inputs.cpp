#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "commands.hpp"
#include "llm2hef/core/io/child_process.hpp"
#include "llm2hef/core/io/npy.hpp"
#include "llm2hef/core/io/output_guard.hpp"
#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/core/runtime/host_inputs.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "python_packages.hpp"

namespace llm2hef::cli {

namespace {
constexpr const char* kHelp =
    R"(Usage: llm2hef inputs OUT (--tokens IDS | --tokens-file FILE | --text TEXT) -o inputs.npz [--layout onnx|device] [--force]

Writes exactly what the Hailo genai runtime feeds the exported graph for a
prompt (token ids), computed from OUT's resources: embedding rows, the
head-tiled additive mask, cos/sin tables from theta.
Keys: the six ONNX input names, plus `positions`.

{options}
)";

int64_t parse_token(const std::string& text) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size())
    throw UsageError("--tokens: expected an integer, got '" + text + "'");
  return v;
}

// Ids separated by commas and/or whitespace; two commas in a row (an empty
// entry) are refused, as a typo more likely than intended.
std::vector<int64_t> parse_tokens(const std::string& text, const std::string& origin) {
  std::vector<int64_t> out;
  std::string item;
  bool after_comma = false;
  auto flush = [&](bool comma) {
    if (!item.empty()) {
      out.push_back(parse_token(item));
      item.clear();
      after_comma = false;
    } else if (comma && (after_comma || out.empty())) {
      throw UsageError(origin + ": empty entry in '" + (text.size() > 80 ? text.substr(0, 80) + "..." : text) + "'");
    }
    if (comma) after_comma = true;
  };
  for (char c : text) {
    if (c == ',')
      flush(true);
    else if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      flush(false);
    else
      item += c;
  }
  flush(false);
  if (after_comma) throw UsageError(origin + ": the list ends with a comma");
  if (out.empty()) throw UsageError(origin + ": empty, no token ids");
  return out;
}

extern "C" char** environ;

// The ids of `text` under the export's tokenizer.json, from Python's
// `tokenizers` (the library that wrote and reads tokenizer.json; llm2hef has
// no encoder of its own). Its stdout comes back through a pipe.
std::vector<int64_t> tokenize_text(const std::string& python, const std::filesystem::path& tokenizer,
                                   const std::string& text) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(tokenizer, ec))
    throw BadInput(tokenizer.string() + ": missing; --text needs the export's tokenizer.json (or pass --tokens)");
  const char* script =
      "import sys\n"
      "try:\n"
      "    from tokenizers import Tokenizer\n"
      "except ImportError:\n"
      "    sys.exit('llm2hef inputs --text: this Python (%s) lacks the tokenizers package: '\n"
      "             '%s -m pip install tokenizers, or pass --python PATH, or give --tokens' % (sys.executable, "
      "sys.executable))\n"
      "ids = Tokenizer.from_file(sys.argv[1]).encode(sys.argv[2], add_special_tokens=False).ids\n"
      "print(' '.join(map(str, ids)))\n";
  // A missing python3 or tokenizers is named with the install command that
  // fits that Python (exit 3), as for calibrate.
  require_python_modules(python, {"tokenizers"},
                         "--text tokenizes with the export's tokenizer.json (or give the ids with --tokens)");
  core::ChildIo io;
  io.capture_stdout = true;
  const core::ChildResult r = core::run_child({python, "-c", script, tokenizer.string(), text}, io);
  if (!r.started()) throw BadInput("cannot run '" + python + "': " + std::strerror(r.start_error));
  if (!r.succeeded())
    throw Unsupported("tokenizing --text with " + tokenizer.string() + " failed: " + python + " " + r.describe() +
                      " (its message is above)");
  const std::string& out = r.stdout_text;
  if (out.find_first_not_of(" \n") == std::string::npos)
    throw UsageError("--text: the text tokenizes to nothing with " + tokenizer.string() + "; give some text");
  return parse_tokens(out, "--text (tokenized)");
}

// --tokens-file: a regular file of at most 16 MiB (a prompt, not a corpus).
std::string read_tokens_file(const std::string& path) {
  const core::RegularFile file(path);
  return file.read_all(16u << 20);
}
}  // namespace

void add_inputs_command(CommandLine& cli) {
  struct Options {
    std::string export_dir, tokens, tokens_file, text, python, output, layout = "onnx";
    bool force = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = cli.add_command(cli.root(), "inputs", kHelp, [o](Invocation& inv) {
    if (!inv.command().count("--tokens") && !inv.command().count("--tokens-file") && !inv.command().count("--text"))
      throw UsageError("inputs needs the prompt: --tokens IDS, --tokens-file FILE or --text TEXT");
    // What runtime_inputs reads of the export: manifest.json and resources/.
    auto reads_export_file = [](const std::filesystem::path& relative) {
      return relative == "manifest.json" || (!relative.empty() && *relative.begin() == "resources");
    };
    std::vector<core::CommandInput> inputs{{"the export folder", o->export_dir, reads_export_file}};
    if (!o->tokens_file.empty()) inputs.push_back({"the token file (--tokens-file)", o->tokens_file, {}});
    core::check_file_output(o->output, o->force, inputs);  // before the work, not after
    std::string python = o->python;
    if (python.empty()) {
      const char* env = std::getenv("LLM2HEF_PYTHON");
      python = env && *env ? env : "python3";
    }
    const std::vector<int64_t> tokens =
        inv.command().count("--text")
            ? tokenize_text(python, std::filesystem::path(o->export_dir) / "resources" / "tokenizer.json", o->text)
        : o->tokens_file.empty() ? parse_tokens(o->tokens, "--tokens")
                                 : parse_tokens(read_tokens_file(o->tokens_file), o->tokens_file);
    auto members = core::runtime_inputs(o->export_dir, tokens,
                                        o->layout == "device" ? core::InputLayout::device : core::InputLayout::onnx);
    core::write_npz(o->output, members, o->force);
    if (!inv.globals().quiet)
      std::cout << "wrote " << o->output << ": the runtime inputs for " << tokens.size() << " token(s) ("
                << (o->layout == "device" ? "device" : "onnx") << " layout)\n";
    return 0;
  });
  app->add_option("OUT", o->export_dir)->required();
  OptionRows& rows = cli.options(*app, 21);
  CLI::Option* ids = rows.add(app->add_option("--tokens", o->tokens), "IDS",
                              "ids separated by commas and/or spaces, e.g. 15496,11,995\nor \"15496 11 995\"");
  CLI::Option* ids_file = rows.add(app->add_option("--tokens-file", o->tokens_file), "FILE",
                                   "the ids in a text file, separated by commas, spaces or\n"
                                   "newlines (e.g. a tokenizer's output saved to a file)");
  CLI::Option* text = rows.add(app->add_option("--text", o->text), "TEXT",
                               "the prompt as text, tokenized with OUT/resources/tokenizer.json\n"
                               "(no special tokens added; apply the chat template yourself).\n"
                               "Runs Python's `tokenizers` package (pip install tokenizers)");
  ids->excludes(ids_file)->excludes(text);
  ids_file->excludes(text);
  rows.add(app->add_option("--python", o->python), "PATH",
           "the interpreter --text runs (default $LLM2HEF_PYTHON, else\npython3)");
  rows.add(app->add_option("-o,--output", o->output)->required(), "FILE", "the .npz to write");
  rows.add_choices(app->add_option("--layout", o->layout),
                   {{"onnx", "pe tables as the ONNX graph takes them [1, N, T] (default)"},
                    {"device", "pe tables tiled per head, as the runtime writes them"}});
  rows.add(app->add_flag("--force", o->force), "", "replace FILE if it exists (only a regular file is replaced)");
}

}  // namespace llm2hef::cli
