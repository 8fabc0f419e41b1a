#include <iostream>
#include <sstream>

#include "args.hpp"
#include "commands.hpp"
#include "llm2hef/core/host_inputs.hpp"
#include "llm2hef/core/npy.hpp"
#include "llm2hef/core/output_guard.hpp"
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

std::vector<int64_t> parse_tokens(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) throw UsageError("--tokens: empty entry in '" + text + "'");
    out.push_back(parse_int("tokens", item));
  }
  return out;
}
}  // namespace

int cmd_inputs(const Globals&, const std::vector<std::string>& argv) {
  Args args(argv, {"tokens", "output", "layout"}, {"force", "help", "h"});
  if (args.has("help") || args.has("h")) {
    std::cout << kHelp;
    return 0;
  }
  if (args.positionals().size() != 1) throw UsageError("inputs takes one export folder (see llm2hef inputs --help)");
  const std::string layout = args.get("layout").value_or("onnx");
  if (layout != "onnx" && layout != "device") throw UsageError("--layout: expected onnx or device");
  const std::string output = args.require("output");
  core::check_file_output(output, args.has("force"));  // before the work, not after
  auto members = core::runtime_inputs(args.positionals()[0], parse_tokens(args.require("tokens")),
                                      layout == "device" ? core::InputLayout::device : core::InputLayout::onnx);
  core::write_npz(output, members, args.has("force"));
  return 0;
}

}  // namespace llm2hef::cli
