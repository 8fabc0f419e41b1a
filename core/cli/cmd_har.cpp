// `llm2hef har inspect|fix|lines`: the HAR half of the DFC flow
// (docs/har.md; hailo-contract.md sections 4, 5, 7, 8).
#include <nlohmann/json.hpp>

#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "llm2hef/core/har/compile_lines.hpp"
#include "llm2hef/core/har/fixups.hpp"
#include "llm2hef/core/progress.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::cli {

namespace {

constexpr const char* kHelp = R"(Usage: llm2hef har COMMAND ...

Reads and repairs the HAR files Hailo's Dataflow Compiler writes
(docs/har.md). HARs are read as streams; nothing is extracted.

  inspect HAR [--json]                  what a HAR holds
  fix IN -o OUT [--manifest M] ...      the HN fixups (before optimize / after optimize)
  lines HAR --for optimize|compile ...  model-script lines that depend on the HN

`llm2hef har COMMAND --help` for each.
)";

constexpr const char* kInspectHelp = R"(Usage: llm2hef har inspect HAR [--json]

Shows a HAR's members (main HN, weights, metadata), its state and the stage
llm2hef infers from it (before_optimize, after_optimize, compiled, unknown),
the HN's scopes, layer counts by type, input layers with shapes and their
original ONNX names, outputs in output order, and cache layers. After
optimize it names the two network groups (<x>__prefill, <x>__tbt) and the
base scope <x> the DFC keeps next to them, which is ignored; when the scopes
are not one of each suffix it says why.

  --json    the same as one JSON object on stdout

Exit status: 0 ok, 2 usage, 3 unreadable or malformed HAR.
)";

constexpr const char* kFixHelp = R"(Usage: llm2hef har fix IN.har -o OUT.har [--manifest manifest.json]
                       [--adapter NAME] [--dry-run] [--force] [--json] [--no-progress]

Applies the fixups of hailo-contract.md section 5 that fit the HAR's stage,
then the adapter's own hook, and writes OUT atomically. IN is never modified.

Before optimize (parsed HAR, state hailo_model):
  rope-input-widening  pe inputs widened to the per-head tiled width, tiling convs removed
  mask-wiring          each mask slice + input_repeats ew_add wired to the full mask
  lm-head-split        one wide lm_head conv split into equal output shards
                       (widths from the manifest's lm_head_shards)
After optimize (quantized HAR; its scopes must be exactly one <x>__prefill
and one <x>__tbt, next to at most the base <x>, which is kept as it is):
  conv-input-order     multi-input convs' inputs reordered to match input_shapes

Only the HN and, when layers are removed or split, the .npz weights are
rewritten; every other member is copied as a stream. Running fix on its own
output changes nothing.

  -o FILE           output HAR (required unless --dry-run)
  --manifest FILE   manifest.json from `llm2hef export`: names the pe and mask
                    input layers, the lm_head shard widths and the adapter
  --adapter NAME    run this adapter's HAR hook (default: the manifest's)
  --dry-run         report what would change; write nothing
  --force           replace OUT if it exists
  --json            the report as JSON on stdout
  --no-progress     never draw the progress bar

Exit status: 0 ok, 2 usage, 3 malformed HAR / HN / weights / manifest,
4 a state or layout llm2hef refuses to fix, 5 internal error.
)";

constexpr const char* kLinesHelp = R"(Usage: llm2hef har lines HAR --for optimize|compile [--manifest M] [--pe-width N] [--json]

Prints the model-script lines that depend on the HN, one per line, for
compile.py to append:

  --for optimize   quantization_param([...], precision_mode=a8_w4) for every
                   conv but the constant ones (> 90% zero kernel) and those
                   with an input at most the pe width wide (hailo-contract.md
                   section 7); run on the fixed, parsed HAR
  --for compile    the <x>__prefill / <x>__tbt network_group lines and a
                   format_conversion line for every cache layer of both
                   groups (section 8); run on the quantized HAR. The base
                   scope <x> the DFC keeps next to the groups is ignored;
                   there must be exactly one scope of each suffix

  --manifest FILE  manifest.json (gives the pe width: theta_length)
  --pe-width N     the pe width, without a manifest
  --json           {"lines": [...], "notes": [...]} on stdout

Exit status: 0 ok, 2 usage, 3 malformed HAR or groups/caches that do not fit.
)";

std::optional<core::ExportManifest> load_manifest(const std::optional<std::string>& path) {
  if (!path) return std::nullopt;
  return core::read_manifest(*path);
}

int cmd_har_inspect(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"json", "help", "h"});
  if (args.has("help") || args.has("h")) {
    std::cout << kInspectHelp;
    return 0;
  }
  if (args.positionals().size() != 1) throw UsageError("har inspect takes one HAR file (see llm2hef har inspect --help)");
  const nlohmann::json report = core::har::inspect_har(args.positionals()[0]);
  std::cout << (args.has("json") ? report.dump(2) + "\n" : core::har::inspect_har_text(report));
  return 0;
}

int cmd_har_fix(const Globals& g, const std::vector<std::string>& argv) {
  Args args(argv, {"o", "output", "manifest", "adapter"}, {"json", "dry-run", "force", "no-progress", "help", "h"});
  if (args.has("help") || args.has("h")) {
    std::cout << kFixHelp;
    return 0;
  }
  if (args.positionals().size() != 1) throw UsageError("har fix takes one input HAR (see llm2hef har fix --help)");
  core::har::FixOptions o;
  o.input = args.positionals()[0];
  auto out = args.get("o");
  if (!out) out = args.get("output");
  o.dry_run = args.has("dry-run");
  if (!out && !o.dry_run) throw UsageError("har fix needs -o OUT.har (or --dry-run)");
  if (out) o.output = *out;
  o.force = args.has("force");
  o.progress = !args.has("no-progress") && core::Progress::stderr_is_terminal();
  o.manifest = load_manifest(args.get("manifest"));
  std::string adapter = args.get("adapter").value_or("");
  if (adapter.empty() && o.manifest) adapter = o.manifest->adapter_name();
  plugins::AdapterHost host;
  if (!adapter.empty()) {
    host = make_host(g);
    const plugins::LoadedAdapter* found = host.find(adapter);
    if (!found)
      throw Unsupported("adapter '" + adapter + "' (" + (args.has("adapter") ? "--adapter" : "named by the manifest") +
                        ") is not installed; see llm2hef adapters --verbose");
    o.adapter = &found->adapter();
    o.adapter_name = adapter;
  } else {
    o.adapter_note = "no adapter named (--adapter, or adapter.name in --manifest): no adapter HAR fixups ran";
  }
  const core::har::FixReport rep = core::har::fix_har(o);
  std::cout << (args.has("json") ? rep.to_json().dump(2) + "\n" : rep.to_text());
  return 0;
}

int cmd_har_lines(const std::vector<std::string>& argv) {
  Args args(argv, {"for", "manifest", "pe-width"}, {"json", "help", "h"});
  if (args.has("help") || args.has("h")) {
    std::cout << kLinesHelp;
    return 0;
  }
  if (args.positionals().size() != 1) throw UsageError("har lines takes one HAR file (see llm2hef har lines --help)");
  const std::string what = args.require("for");
  core::har::ScriptLines lines;
  if (what == "optimize") {
    const std::optional<core::ExportManifest> manifest = load_manifest(args.get("manifest"));
    std::optional<int64_t> pe = args.get_int("pe-width");
    if (!pe && manifest) pe = manifest->theta_length;
    if (!pe) throw UsageError("har lines --for optimize needs --manifest (theta_length) or --pe-width N");
    lines = core::har::optimize_lines(args.positionals()[0], *pe);
  } else if (what == "compile") {
    const core::har::HarIndex idx = core::har::scan_har(args.positionals()[0]);
    lines = core::har::compile_lines(*idx.hn);
  } else {
    throw UsageError("--for takes 'optimize' or 'compile', not '" + what + "'");
  }
  if (args.has("json")) {
    std::cout << nlohmann::json{{"lines", lines.lines}, {"notes", lines.notes}}.dump(2) << "\n";
  } else {
    for (const auto& l : lines.lines) std::cout << l << "\n";
    for (const auto& n : lines.notes) std::cerr << "note: " << n << "\n";
  }
  return 0;
}

}  // namespace

int cmd_har(const Globals& g, const std::vector<std::string>& argv) {
  if (argv.empty()) {
    std::cerr << kHelp;
    return static_cast<int>(ExitCode::usage);
  }
  const std::string sub = argv[0];
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (sub == "--help" || sub == "-h") {
    std::cout << kHelp;
    return 0;
  }
  if (sub == "inspect") return cmd_har_inspect(rest);
  if (sub == "fix") return cmd_har_fix(g, rest);
  if (sub == "lines") return cmd_har_lines(rest);
  throw UsageError("unknown har command '" + sub + "' (inspect, fix, lines; see llm2hef har --help)");
}

}  // namespace llm2hef::cli
