#include <charconv>
#include <iostream>

#include "commands.hpp"
#include "llm2hef/core/export/host_inputs.hpp"
#include "llm2hef/core/io/npy.hpp"
#include "llm2hef/core/io/output_guard.hpp"
#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::cli {

namespace {
constexpr const char* kHelp = R"(Usage: llm2hef inputs OUT (--tokens IDS | --tokens-file FILE) -o inputs.npz [--layout onnx|device] [--force]

Writes exactly what the Hailo genai runtime feeds the exported graph for a
prompt (token ids), computed from OUT's resources: embedding rows, the
head-tiled additive mask, cos/sin tables from theta.
Keys: the six ONNX input names, plus `positions`.

  --tokens IDS       ids separated by commas and/or spaces, e.g. 15496,11,995
                     or "15496 11 995"
  --tokens-file FILE the ids in a text file, separated by commas, spaces or
                     newlines (e.g. a tokenizer's output saved to a file)
  -o, --output FILE  the .npz to write
  --layout onnx      pe tables as the ONNX graph takes them [1, N, T] (default)
  --layout device    pe tables tiled per head, as the runtime writes them
  --force            replace FILE if it exists (only a regular file is replaced)
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

// --tokens-file: a regular file of at most 16 MiB (a prompt, not a corpus).
std::string read_tokens_file(const std::string& path) {
  const core::RegularFile file(path);
  return file.read_all(16u << 20);
}
}  // namespace

void add_inputs_command(CommandLine& cli) {
  struct Options {
    std::string export_dir, tokens, tokens_file, output, layout = "onnx";
    bool force = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = cli.add_command(cli.root(), "inputs", kHelp, [o](Invocation& inv) {
    if (!inv.command().count("--tokens") && !inv.command().count("--tokens-file"))
      throw UsageError("inputs needs the prompt's ids: --tokens IDS or --tokens-file FILE");
    // What runtime_inputs reads of the export: manifest.json and resources/.
    auto reads_export_file = [](const std::filesystem::path& relative) {
      return relative == "manifest.json" || (!relative.empty() && *relative.begin() == "resources");
    };
    std::vector<core::CommandInput> inputs{{"the export folder", o->export_dir, reads_export_file}};
    if (!o->tokens_file.empty()) inputs.push_back({"the token file (--tokens-file)", o->tokens_file, {}});
    core::check_file_output(o->output, o->force, inputs);  // before the work, not after
    const std::vector<int64_t> tokens = o->tokens_file.empty()
                                            ? parse_tokens(o->tokens, "--tokens")
                                            : parse_tokens(read_tokens_file(o->tokens_file), o->tokens_file);
    auto members = core::runtime_inputs(o->export_dir, tokens,
                                        o->layout == "device" ? core::InputLayout::device : core::InputLayout::onnx);
    core::write_npz(o->output, members, o->force);
    return 0;
  });
  app->add_option("OUT", o->export_dir)->required();
  CLI::Option* ids = app->add_option("--tokens", o->tokens);
  ids->excludes(app->add_option("--tokens-file", o->tokens_file));
  app->add_option("-o,--output", o->output)->required();
  app->add_option("--layout", o->layout)->check(CLI::IsMember({"onnx", "device"}));
  app->add_flag("--force", o->force);
}

}  // namespace llm2hef::cli
