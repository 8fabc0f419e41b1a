#include <charconv>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "llm2hef/core/export/host_inputs.hpp"
#include "llm2hef/core/io/npy.hpp"
#include "llm2hef/core/io/output_guard.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::cli {

namespace {
constexpr const char* kHelp = R"(Usage: llm2hef inputs OUT --tokens IDS -o inputs.npz [--layout onnx|device] [--force]

Writes exactly what the Hailo genai runtime feeds the exported graph for a
prompt (token ids, comma-separated), computed from OUT's resources:
embedding rows, the head-tiled additive mask, cos/sin tables from theta.
Keys: the six ONNX input names, plus `positions`.

  --tokens IDS       e.g. 15496,11,995
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

std::vector<int64_t> parse_tokens(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) throw UsageError("--tokens: empty entry in '" + text + "'");
    out.push_back(parse_token(item));
  }
  return out;
}
}  // namespace

void add_inputs_command(CommandLine& cli) {
  struct Options {
    std::string export_dir, tokens, output, layout = "onnx";
    bool force = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = cli.add_command(cli.root(), "inputs", kHelp, [o](Invocation&) {
    core::check_file_output(o->output, o->force);  // before the work, not after
    auto members = core::runtime_inputs(o->export_dir, parse_tokens(o->tokens),
                                        o->layout == "device" ? core::InputLayout::device : core::InputLayout::onnx);
    core::write_npz(o->output, members, o->force);
    return 0;
  });
  app->add_option("OUT", o->export_dir)->required();
  app->add_option("--tokens", o->tokens)->required();
  app->add_option("-o,--output", o->output)->required();
  app->add_option("--layout", o->layout)->check(CLI::IsMember({"onnx", "device"}));
  app->add_flag("--force", o->force);
}

}  // namespace llm2hef::cli
