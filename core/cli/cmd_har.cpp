// `llm2hef har inspect|fix|lines`: the HAR half of the DFC flow
// (docs/har.md; hailo-contract.md sections 4, 5, 7, 8).
#include <nlohmann/json.hpp>

#include <iostream>

#include "commands.hpp"
#include "llm2hef/core/har/compile_lines.hpp"
#include "llm2hef/core/har/har_fix.hpp"
#include "llm2hef/core/har/inspect_har.hpp"
#include "llm2hef/core/har/precision_plan.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/io/output_guard.hpp"
#include "llm2hef/core/io/progress.hpp"
#include "llm2hef/core/io/terminal_text.hpp"
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

{options}

Exit status: 0 ok, 2 usage, 3 unreadable or malformed HAR.
)";

constexpr const char* kFixHelp = R"(Usage: llm2hef har fix IN.har -o OUT.har [--manifest manifest.json]
                       [--adapter NAME] [--dry-run] [--force] [--json] [--no-progress]

Applies the fixups of hailo-contract.md section 5 that fit the HAR's stage,
then the adapter's own hook, and writes OUT atomically. IN is never modified.

Before optimize (parsed HAR, state hailo_model):
  pe-input-roles       with --manifest, a check: each pe input's role (q/k by its
                       tiling width, cos/sin by the rotate-half path) read from the
                       HN; refused (exit 3) naming both readings when they disagree,
                       trusted with a warning where the structure cannot tell
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

{options}

Exit status: 0 ok, 2 usage, 3 malformed HAR / HN / weights / manifest, or pe
roles the HN contradicts, 4 a state or layout llm2hef refuses to fix, 5 internal
error.
)";

constexpr const char* kLinesHelp = R"(Usage: llm2hef har lines HAR --for optimize|compile [--manifest M] [--pe-width N]
                         [--plan quantization.json] [--json]

Prints the model-script lines that depend on the HN, one per line, for
compile.py to append:

{options}

Every layer name written must be one a model script can hold (letters,
digits and '_' in '/'-separated parts, as the DFC names layers): a model
script has no quoting, so any other name is refused (exit 3), naming it.

Exit status: 0 ok, 2 usage, 3 malformed HAR or plan, a layer name a model
script cannot hold, or groups/caches that do not fit.
)";

std::optional<core::ExportManifest> load_manifest(const std::optional<std::string>& path) {
  if (!path) return std::nullopt;
  return core::read_manifest(*path);
}

struct InspectArgs {
  std::string har;
  bool json = false;
};

int run_inspect(const InspectArgs& o) {
  const nlohmann::json report = core::har::inspect_har(o.har);
  std::cout << (o.json ? core::json_text(report, 2) + "\n" : core::har::inspect_har_text(report));
  return 0;
}

struct FixArgs {
  std::string input, output, manifest, adapter;
  bool json = false, dry_run = false, force = false, no_progress = false;
};

int run_fix(const FixArgs& a, Invocation& inv) {
  const bool given_output = inv.command().count("--output") > 0;
  if (!given_output && !a.dry_run) throw UsageError("har fix needs -o OUT.har (or --dry-run)");
  core::har::FixOptions o;
  o.input = a.input;
  o.dry_run = a.dry_run;
  if (given_output) o.output = a.output;
  if (given_output && !a.dry_run) {
    std::vector<core::CommandInput> inputs{{"the HAR (IN.har)", a.input, {}}};
    if (inv.command().count("--manifest")) inputs.push_back({"the export's manifest (--manifest)", a.manifest, {}});
    core::check_file_output(a.output, a.force, inputs);
  }
  o.force = a.force;
  o.progress = !a.no_progress && core::Progress::stderr_is_terminal();
  o.manifest = load_manifest(inv.command().count("--manifest") ? std::optional<std::string>(a.manifest) : std::nullopt);
  std::string adapter = a.adapter;
  if (adapter.empty() && o.manifest) adapter = o.manifest->adapter_name();
  if (!adapter.empty()) {
    const plugins::LoadedAdapter* found = inv.host().find(adapter);
    if (!found)
      throw Unsupported("adapter '" + adapter + "' (" + (a.adapter.empty() ? "named by the manifest" : "--adapter") +
                        ") is not installed; see llm2hef adapters --verbose");
    o.adapter = &found->adapter();
    o.adapter_name = adapter;
  } else {
    o.adapter_note = "no adapter named (--adapter, or adapter.name in --manifest): no adapter HAR fixups ran";
  }
  const core::har::FixReport rep = core::har::fix_har(o);
  std::cout << (a.json ? core::json_text(rep.to_json(), 2) + "\n" : rep.to_text());
  return 0;
}

struct LinesArgs {
  std::string har, what, manifest, plan;
  int64_t pe_width = 0;
  bool json = false;
};

int run_lines(const LinesArgs& a, Invocation& inv) {
  core::har::ScriptLines lines;
  if (a.what == "optimize") {
    const std::optional<core::ExportManifest> manifest =
        load_manifest(inv.command().count("--manifest") ? std::optional<std::string>(a.manifest) : std::nullopt);
    std::optional<int64_t> pe;
    if (inv.command().count("--pe-width")) pe = a.pe_width;
    if (!pe && manifest) pe = manifest->theta_length;
    if (!pe) throw UsageError("har lines --for optimize needs --manifest (theta_length) or --pe-width N");
    std::optional<core::har::PrecisionPlan> plan;
    if (inv.command().count("--plan")) plan = core::har::read_precision_plan(a.plan);
    lines = core::har::optimize_lines(a.har, *pe, plan ? &*plan : nullptr);
  } else {  // "compile": the only other choice --for accepts
    if (inv.command().count("--plan"))
      throw UsageError("har lines: --plan applies to --for optimize (the plan sets quantization, before optimize)");
    const core::har::HarIndex idx = core::har::scan_har(a.har);
    lines = core::har::compile_lines(*idx.hn);
  }
  if (a.json) {
    std::cout << core::json_text(nlohmann::json{{"lines", lines.lines}, {"notes", lines.notes}}, 2) << "\n";
  } else {
    // The lines hold only names checked for a model script (script_names.hpp);
    // the notes name layers as the HAR spells them.
    for (const auto& l : lines.lines) std::cout << l << "\n";
    for (const auto& n : lines.notes) std::cerr << "note: " << core::printable(n) << "\n";
  }
  return 0;
}

}  // namespace

void add_har_commands(CommandLine& cli) {
  CLI::App* har = cli.add_group(cli.root(), "har", kHelp);

  auto inspect = std::make_shared<InspectArgs>();
  CLI::App* app =
      cli.add_command(*har, "inspect", kInspectHelp, [inspect](Invocation&) { return run_inspect(*inspect); });
  app->add_option("HAR", inspect->har)->required();
  OptionRows& inspect_rows = cli.options(*app, 12);
  inspect_rows.add(app->add_flag("--json", inspect->json), "", "the same as one JSON object on stdout");

  auto fix = std::make_shared<FixArgs>();
  app = cli.add_command(*har, "fix", kFixHelp, [fix](Invocation& inv) { return run_fix(*fix, inv); });
  app->add_option("IN.har", fix->input)->required();
  OptionRows& fix_rows = cli.options(*app, 20);
  fix_rows.add(app->add_option("-o,--output", fix->output), "FILE", "output HAR (required unless --dry-run)");
  fix_rows.add(app->add_option("--manifest", fix->manifest), "FILE",
               "manifest.json from `llm2hef export`: names the pe and mask\n"
               "input layers, the lm_head shard widths and the adapter");
  fix_rows.add(app->add_option("--adapter", fix->adapter), "NAME",
               "run this adapter's HAR hook (default: the manifest's)");
  fix_rows.add(app->add_flag("--dry-run", fix->dry_run), "", "report what would change; write nothing");
  fix_rows.add(app->add_flag("--force", fix->force), "", "replace OUT if it exists");
  fix_rows.add(app->add_flag("--json", fix->json), "", "the report as JSON on stdout");
  fix_rows.add(app->add_flag("--no-progress", fix->no_progress), "", "never draw the progress bar");

  auto lines = std::make_shared<LinesArgs>();
  app = cli.add_command(*har, "lines", kLinesHelp, [lines](Invocation& inv) { return run_lines(*lines, inv); });
  app->add_option("HAR", lines->har)->required();
  OptionRows& lines_rows = cli.options(*app, 19);
  lines_rows.add_choices(app->add_option("--for", lines->what)->required(),
                         {{"optimize",
                           "quantization_param([...], precision_mode=a8_w4) for every\n"
                           "conv but the constant ones (> 90% zero kernel) and those\n"
                           "with an input at most the pe width wide (hailo-contract.md\n"
                           "section 7); run on the fixed, parsed HAR.\n"
                           "With --plan: each plan entry's ONNX node is found in the\n"
                           "layers' original_names and its layers get\n"
                           "quantization_param([...], precision_mode=<its mode>), one\n"
                           "line per mode; those layers leave the default line, whose\n"
                           "mode is the plan's default_mode. An entry that maps to no\n"
                           "layer is refused (exit 3), with the closest names, and so\n"
                           "is a mode on a layer type Hailo's scripts never give it\n"
                           "(softmax, matmul, an input layer but input_layer1 at\n"
                           "a16_w16: docs/quantization-gate.md)"},
                          {"compile",
                           "the <x>__prefill / <x>__tbt network_group lines and a\n"
                           "format_conversion line for every cache layer of both\n"
                           "groups (section 8); run on the quantized HAR. The base\n"
                           "scope <x> the DFC keeps next to the groups is ignored;\n"
                           "there must be exactly one scope of each suffix"}});
  lines_rows.gap();
  lines_rows.add(app->add_option("--manifest", lines->manifest), "FILE",
                 "manifest.json (gives the pe width: theta_length)");
  lines_rows.add(app->add_option("--pe-width", lines->pe_width), "N", "the pe width, without a manifest");
  lines_rows.add(app->add_option("--plan", lines->plan), "FILE",
                 "quantization.json from `llm2hef calibrate` (--for optimize)");
  lines_rows.add(app->add_flag("--json", lines->json), "", "{\"lines\": [...], \"notes\": [...]} on stdout");
}

}  // namespace llm2hef::cli
