// `llm2hef calibrate`: the C++ side checks what it can before any work (the
// export, the prompts, the outputs, Python and its packages), then runs the
// export's calibrate.py with python3 and onnxruntime. onnxruntime is not
// packaged in Debian 12 and its wheel is what users have; the script asks this
// binary for the runtime-fed inputs of every prompt (`llm2hef inputs`, the
// same code that builds the DFC's calibration set). docs/quantization.md.
#include <sys/wait.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "llm2hef/core/dfc/calibrate_args.hpp"
#include "llm2hef/core/dfc/calibrate_script.hpp"
#include "llm2hef/core/inspect/decode_speed.hpp"
#include "llm2hef/core/io/child_process.hpp"
#include "llm2hef/core/io/output_guard.hpp"
#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/core/manifest/export_manifest.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "python_packages.hpp"

namespace llm2hef::cli {

namespace fs = std::filesystem;

namespace {
constexpr const char* kHelp =
    R"(Usage: llm2hef calibrate OUT (--calib-chat FILE | --calib-text FILE | --calib-tokens FILE)
                         [--eval-chat FILE | --eval-text FILE | --eval-tokens FILE]
                         [-o OUT/quantization.json] [--precision-budget SIZE] [options]

Measures the activations of the exported fp32 graph, fed as the genai runtime
feeds it, over the calibration prompts (one at a time); plans which layers
need 16-bit activations or 8-bit weights; and runs a fake-quantization proxy
of the DFC (the default A8W4 and the plan) on held-out prompts. Writes
quantization.json (the plan, the ranges, the proxy's figures), a report
(-report.md) and a picture (.svg) beside it, then prints the compile.py
command: compile.py applies OUT/quantization.json by itself. The proxy is
not the DFC: only the DFC's own emulator and the chip can confirm its figures.

Runs OUT/calibrate.py with python3 and the packages numpy, onnx and
onnxruntime, plus jinja2 and tokenizers for chat, tokenizers for text; what
is missing is named with the command that installs it (exit 3).

{options}
)";

struct Options {
  std::string export_dir, calib_tokens, calib_text, calib_chat, eval_tokens, eval_text, eval_chat, output, budget,
      python, memory_limit;
  int threads = 0;
  int calib_size = 0, greedy_steps = 16, sensitivity_prompts = 2;
  double min_levels = 32, max_activation_drop = 0.01, max_weight_drop = 0.02, min_cosine = 0, min_top1 = 0,
         min_tokens_per_s = 0;
  bool no_simulate = false, force = false;
};

// A number as Python reads it back exactly (shortest round trip): "1e-07",
// never std::to_string's "0.000000".
std::string exact_number(double value) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  (void)ec;  // 64 characters hold any double
  return std::string(buf, end);
}

// CLI11's PositiveNumber lets NaN through (every comparison with it is false).
CLI::Validator finite(bool positive) {
  return CLI::Validator(
      [positive](std::string& text) -> std::string {
        double v = 0;
        try {
          v = std::stod(text);
        } catch (const std::exception&) {
          return "'" + text + "' is not a number";
        }
        if (!std::isfinite(v)) return "'" + text + "' is not a finite number";
        if (positive ? v <= 0 : v < 0) return "'" + text + "' must be " + (positive ? "above 0" : "0 or more");
        return {};
      },
      positive ? "POSITIVE" : "NONNEGATIVE");
}

std::string python_of(const Options& o) {
  if (!o.python.empty()) return o.python;
  if (const char* env = std::getenv("LLM2HEF_PYTHON"); env && *env) return env;
  return "python3";
}

// The step after calibrate: compile.py on the DFC machine, with the same
// calibration input. It applies OUT/quantization.json by itself (its --plan
// default); a plan written anywhere else has to be named.
void print_next_step(const Options& o, const fs::path& dir, const fs::path& output) {
  const std::string input = !o.calib_chat.empty()   ? " --calib-chat " + o.calib_chat
                            : !o.calib_text.empty() ? " --calib-text " + o.calib_text
                                                    : " --calib-tokens " + o.calib_tokens;
  std::error_code ec;
  const fs::path beside = dir / "quantization.json";
  const bool found_by_itself = fs::equivalent(output, beside, ec);
  std::cout << "next: python " << (dir / "compile.py").string() << input
            << (found_by_itself ? "" : " --plan " + output.string())
            << "   (on the machine with Hailo's DFC; compile.py applies "
            << (found_by_itself ? beside.string() + " by itself" : "the plan given with --plan") << ")\n";
}

fs::path self_executable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw InternalError("cannot find this program's path (/proc/self/exe): " + ec.message());
  return p;
}

// Opened as a regular file, so a FIFO, device or folder is named as what it
// is (a FIFO used to be "no such file").
void check_readable(const std::string& path, const char* option) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) throw UsageError(std::string(option) + " " + path + ": no such file");
  try {
    core::RegularFile probe(path);
  } catch (const Error& e) {
    throw Error(e.code(), std::string(option) + ": " + e.what());
  }
}

// What calibrate reads of the export: a replaced one of these would be read
// half old, half new (`-o OUT/model.onnx --force` replaced the graph).
bool reads_export_file(const fs::path& relative) {
  static const fs::path kRead[] = {"manifest.json", "model.onnx", "model.onnx.data", core::kCalibrateScriptName};
  for (const fs::path& p : kRead)
    if (relative == p) return true;
  return !relative.empty() && *relative.begin() == "resources";
}

}  // namespace

namespace {

// The prompt files given, each with the option that named it.
std::vector<std::pair<std::string, const char*>> prompt_files(const Options& o) {
  std::vector<std::pair<std::string, const char*>> out;
  for (const auto& [path, option] : {std::pair{&o.calib_tokens, "--calib-tokens"},
                                     {&o.calib_text, "--calib-text"},
                                     {&o.calib_chat, "--calib-chat"},
                                     {&o.eval_tokens, "--eval-tokens"},
                                     {&o.eval_text, "--eval-text"},
                                     {&o.eval_chat, "--eval-chat"}})
    if (!path->empty()) out.emplace_back(*path, option);
  return out;
}

// Refuses what calibrate.py would stop on later: no calibration prompts, an
// unreadable prompt file, token ids outside the vocabulary, no prompts to
// hold out for the proxy.
void check_prompts(const Options& o, const core::ExportManifest& manifest) {
  if (o.calib_tokens.empty() && o.calib_text.empty() && o.calib_chat.empty())
    throw UsageError(
        "calibrate needs calibration prompts: --calib-chat FILE (JSON lines of conversations), --calib-text FILE "
        "or --calib-tokens FILE (a JSON list of token-id lists)");
  for (const auto& [path, option] : prompt_files(o)) check_readable(path, option);
  std::size_t calib_prompts = 0;
  if (!o.calib_tokens.empty()) calib_prompts = core::check_token_sequences(o.calib_tokens, manifest.dims.vocab);
  if (!o.eval_tokens.empty()) core::check_token_sequences(o.eval_tokens, manifest.dims.vocab);
  const bool held_out = !o.eval_tokens.empty() || !o.eval_text.empty() || !o.eval_chat.empty();
  if (!o.no_simulate && !held_out && !o.calib_tokens.empty() && calib_prompts < 2)
    throw UsageError(
        "the proxy needs held-out prompts: --eval-chat/--eval-text/--eval-tokens, two or more calibration "
        "prompts (the last quarter is held out), or --no-simulate");
}

// The plan, its report and its picture, checked against every input; returns
// the plan's path.
fs::path check_outputs(const Options& o, const fs::path& dir) {
  const fs::path output = o.output.empty() ? dir / "quantization.json" : fs::path(o.output);
  fs::path stem = output;
  stem.replace_extension();
  std::vector<core::CommandInput> inputs{{"the export folder (OUT)", dir, reads_export_file}};
  for (const auto& [path, option] : prompt_files(o))
    inputs.push_back({std::string("the prompts (") + option + ")", path, {}});
  for (const fs::path& p : {output, fs::path(stem.string() + "-report.md"), fs::path(stem.string() + ".svg")})
    core::check_file_output(p, o.force, inputs);
  std::error_code ec;
  if (!fs::is_directory(output.parent_path().empty() ? fs::path(".") : output.parent_path(), ec))
    throw UsageError("-o " + output.string() + ": its folder does not exist");
  return output;
}

// calibrate.py's command line: every value checked and in its exact form.
std::vector<std::string> script_arguments(const Options& o, const CLI::App& command, const std::string& python,
                                          const fs::path& dir, const fs::path& output) {
  std::string budget, memory_limit;
  if (!o.budget.empty()) budget = std::to_string(core::parse_byte_size(o.budget, "--precision-budget"));
  if (!o.memory_limit.empty()) memory_limit = std::to_string(core::parse_byte_size(o.memory_limit, "--memory-limit"));
  std::vector<std::string> argv{python,         "-",
                                "--export-dir", fs::absolute(dir).string(),
                                "--llm2hef",    self_executable().string(),
                                "-o",           fs::absolute(output).string()};
  auto add = [&](const char* flag, const std::string& value) {
    if (!value.empty()) argv.insert(argv.end(), {flag, value});
  };
  add("--calib-tokens", o.calib_tokens);
  add("--calib-text", o.calib_text);
  add("--calib-chat", o.calib_chat);
  add("--eval-tokens", o.eval_tokens);
  add("--eval-text", o.eval_text);
  add("--eval-chat", o.eval_chat);
  add("--precision-budget", budget);
  add("--memory-limit", memory_limit);
  add("--threads", std::to_string(o.threads));
  // The device's bandwidth when it generates, anchored on public figures
  // (docs/decode-speed.md): calibrate.py turns each row's bytes into tokens/s.
  const auto [bandwidth_low, bandwidth_high] = core::decode_bandwidth();
  add("--decode-bandwidth", exact_number(bandwidth_low) + ":" + exact_number(bandwidth_high));
  if (o.calib_size > 0) add("--calib-size", std::to_string(o.calib_size));
  add("--min-levels", exact_number(o.min_levels));
  add("--max-activation-drop", exact_number(o.max_activation_drop));
  add("--max-weight-drop", exact_number(o.max_weight_drop));
  if (command.count("--min-cosine")) add("--min-cosine", exact_number(o.min_cosine));
  if (command.count("--min-top1")) add("--min-top1", exact_number(o.min_top1));
  if (command.count("--min-tokens-per-s")) add("--min-tokens-per-s", exact_number(o.min_tokens_per_s));
  add("--greedy-steps", std::to_string(o.greedy_steps));
  add("--sensitivity-prompts", std::to_string(o.sensitivity_prompts));
  if (o.no_simulate) argv.push_back("--no-simulate");
  return argv;
}

// The script compiled into this binary, fed on standard input, never
// whatever OUT/calibrate.py holds now: a file in a folder is no proof of
// where it came from. The export's copy is for running by hand.
std::string builtin_script(const core::ExportManifest& manifest, const fs::path& script) {
  const std::string builtin = core::calibrate_script(manifest);
  std::string on_disk;
  try {
    on_disk = core::RegularFile(script).read_all(builtin.size() + 1);
  } catch (const Error&) {
  }
  if (on_disk != builtin)
    std::cerr << "llm2hef: " << script.string()
              << " differs from the calibrate.py built into this llm2hef (edited, or written by another "
                 "version); running the built-in one\n";
  return builtin;
}

void run_script(const std::vector<std::string>& argv, const std::string& script) {
  std::cout.flush();
  core::ChildIo io;
  io.stdin_text = &script;
  // glibc's malloc keeps freed blocks under its (growing) mmap threshold in
  // per-thread arenas: onnxruntime's intermediates of a few MB then pile up
  // run after run. Freed at once instead, SmolLM2 at cache 2048 peaked at
  // 1.27 GiB against 2.86 GiB (docs/benchmarks.md). A user's own setting wins.
  io.env_defaults = {"MALLOC_MMAP_THRESHOLD_=131072", "MALLOC_ARENA_MAX=2"};
  const core::ChildResult r = core::run_child(argv, io);
  const std::string& python = argv.front();
  if (!r.started()) throw BadInput("cannot run '" + python + "': " + std::strerror(r.start_error));
  // calibrate.py exits 3 for bad input (a prompt file's line, a missing
  // package), which stays bad input here.
  const bool bad_input = WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 3;
  if (!r.succeeded())
    throw Error(bad_input ? ExitCode::bad_input : ExitCode::failure,
                "calibrate.py (run by " + python + ") " + r.describe() +
                    (WIFEXITED(r.wait_status) ? " (its message is above)" : ""));
}

int run_calibrate(const Options& o, Invocation& inv) {
  const fs::path dir(o.export_dir);
  const core::ExportManifest manifest = core::read_manifest(dir / "manifest.json");
  const fs::path script = dir / core::kCalibrateScriptName;
  if (!fs::is_regular_file(script))
    throw BadInput(script.string() +
                   ": missing; this export was written by an llm2hef without `calibrate`: "
                   "re-run `llm2hef export`");
  check_prompts(o, manifest);
  const fs::path output = check_outputs(o, dir);
  const std::string python = python_of(o);
  std::vector<std::string> modules{"numpy", "onnx", "onnxruntime"};
  const bool chat = !o.calib_chat.empty() || !o.eval_chat.empty();
  if (chat) modules.push_back("jinja2");
  if (chat || !o.calib_text.empty() || !o.eval_text.empty()) modules.push_back("tokenizers");
  require_python_modules(python, modules, "calibrate runs the export's calibrate.py");
  const std::vector<std::string> argv = script_arguments(o, inv.command(), python, dir, output);
  run_script(argv, builtin_script(manifest, script));
  if (!inv.globals().quiet) print_next_step(o, dir, output);
  return 0;
}

// One source of calibration prompts, and one of held-out prompts.
void add_prompt_options(OptionRows& rows, CLI::App& app, Options& o) {
  CLI::Option* calib_chat = rows.add(app.add_option("--calib-chat", o.calib_chat), "FILE",
                                     "conversations, JSON lines: each line a list of\n"
                                     "{\"role\": ..., \"content\": ...} messages, rendered\n"
                                     "through the exported chat template as the genai\n"
                                     "runtime renders a first turn (bos/eos empty, the\n"
                                     "generation prompt added) and tokenized as it\n"
                                     "tokenizes; a bad line is exit 3 naming FILE:LINE");
  CLI::Option* calib_text = rows.add(app.add_option("--calib-text", o.calib_text), "FILE",
                                     "text, tokenized with OUT/resources/tokenizer.json and\n"
                                     "cut into prompts of the cache size, the tail a last,\n"
                                     "shorter one (as compile.py does)");
  CLI::Option* calib_tokens = rows.add(app.add_option("--calib-tokens", o.calib_tokens), "FILE",
                                       "a JSON list of token-id lists (one prompt each)");
  CLI::Option* eval_chat = rows.add(app.add_option("--eval-chat", o.eval_chat), "FILE",
                                    "held-out prompts for the proxy (never calibrated on);\n"
                                    "without them the last quarter of the calibration\n"
                                    "prompts is held out");
  CLI::Option* eval_text = rows.add_sharing(app.add_option("--eval-text", o.eval_text), "FILE");
  CLI::Option* eval_tokens = rows.add_sharing(app.add_option("--eval-tokens", o.eval_tokens), "FILE");
  for (const auto& [tokens, text, chat] :
       {std::array{calib_tokens, calib_text, calib_chat}, std::array{eval_tokens, eval_text, eval_chat}}) {
    tokens->excludes(text)->excludes(chat);
    text->excludes(chat);
  }
}

// The plan's thresholds and the run's resources; the defaults the rows name
// are the ones Options starts with.
void add_plan_options(OptionRows& rows, CLI::App& app, Options& o) {
  rows.add(app.add_option("-o,--output", o.output), "FILE", "default OUT/quantization.json");
  rows.add(app.add_option("--calib-size", o.calib_size)->check(CLI::PositiveNumber), "N",
           "calibrate on the first N prompts; an input with fewer\nis exit 3, saying how much more it needs");
  rows.add(app.add_option("--precision-budget", o.budget), "S",
           "most bytes the plan may add (512MiB, 1GB, ...): lines\nbeyond it are listed as left out");
  rows.add(app.add_option("--min-levels", o.min_levels)->check(finite(true)), "X",
           "steps an 8-bit grid must give the 99.9th percentile\nof |x| (default " + exact_number(o.min_levels) + ")");
  rows.add(app.add_option("--max-activation-drop", o.max_activation_drop)->check(finite(false)), "X",
           "how far the plan's activations may stay below\n"
           "every raisable tensor at 16 bits in the proxy's mean\n"
           "logits cosine, weights fp32 (default " +
               exact_number(o.max_activation_drop) +
               "); groups of\n"
               "tensors go to 16 bits, fewest 8-bit steps first");
  rows.add(app.add_option("--max-weight-drop", o.max_weight_drop)->check(finite(false)), "X",
           "how far 4-bit weights may lower the proxy's mean\n"
           "logits cosine below the same plan with fp32 weights\n"
           "(default " +
               exact_number(o.max_weight_drop) +
               "); groups of layers get 8-bit weights,\n"
               "the most quality per byte first, until it holds");
  rows.add(app.add_option("--min-cosine", o.min_cosine)->check(finite(true)), "X",
           "also a floor on the plan's mean logits cosine");
  rows.add(app.add_option("--min-top1", o.min_top1)->check(finite(true)), "X", "a floor on the plan's top-1 agreement");
  rows.add(app.add_option("--min-tokens-per-s", o.min_tokens_per_s)->check(finite(true)), "X",
           "never raise weights past this decode-speed estimate");
  rows.add(app.add_option("--threads", o.threads)->check(CLI::NonNegativeNumber), "N",
           "onnxruntime's threads (default " + std::to_string(o.threads) + ": one per core)");
  rows.add(app.add_option("--memory-limit", o.memory_limit), "SIZE",
           "memory the run may use (default: what the machine has\n"
           "available); calibrate estimates its own peak from the\n"
           "graph's shapes, prints it, and refuses up front when\n"
           "the estimate is above the limit");
  rows.add(app.add_flag("--no-simulate", o.no_simulate), "", "ranges and the activation plan only");
  rows.add(app.add_option("--greedy-steps", o.greedy_steps)->check(CLI::PositiveNumber), "N",
           "length of the greedy continuations (default " + std::to_string(o.greedy_steps) + ")");
  rows.add(app.add_option("--sensitivity-prompts", o.sensitivity_prompts)->check(CLI::PositiveNumber), "N",
           "calibration prompts the weight sensitivity runs on\n(default " + std::to_string(o.sensitivity_prompts) +
               ")");
  rows.add(app.add_option("--python", o.python), "PATH", "the interpreter (default $LLM2HEF_PYTHON or python3)");
  rows.add(app.add_flag("--force", o.force), "", "replace existing outputs");
}

}  // namespace

void add_calibrate_command(CommandLine& cli) {
  auto o = std::make_shared<Options>();
  CLI::App* app =
      cli.add_command(cli.root(), "calibrate", kHelp, [o](Invocation& inv) { return run_calibrate(*o, inv); });
  app->add_option("OUT", o->export_dir)->required();
  OptionRows& rows = cli.options(*app, 24);
  add_prompt_options(rows, *app, *o);
  add_plan_options(rows, *app, *o);
}

}  // namespace llm2hef::cli
