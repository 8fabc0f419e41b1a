// What `--force` may replace. Replacing an output removes what was there, so
// before anything is written the target is checked against the inputs of the
// run and against what the command itself writes: a user who mistypes `-o`
// must get an error, never a deleted checkpoint.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace llm2hef::core {

// One input of a command, for the rule every command with `-o` follows: the
// output is never one of its inputs (not by name, not through a symbolic or
// hard link) and never lies inside an input folder where the command reads,
// because `--force` would replace what the run is reading.
struct CommandInput {
  std::string role;  // how the user gave it, e.g. "the secret key (--key)"
  std::filesystem::path path;
  // For a folder: whether the command reads this path (relative to the
  // folder). Empty: it reads everything below it. `registry index DIR` reads
  // only DIR/*.so, so its default output DIR/index.json stays allowed.
  std::function<bool(const std::filesystem::path& relative)> reads;
};

// UsageError naming the input when `output` is one of `inputs`, lies inside
// an input folder where the command reads, or (for a folder output) contains
// an input. Inputs that do not exist are skipped (their own reader reports
// them).
void check_output_is_not_input(const std::filesystem::path& output, const std::vector<CommandInput>& inputs);

// For `export -o OUT [--force]` reading `model_dir` (and `other_inputs`). Throws UsageError when
// OUT exists and is not a folder; when OUT is the checkpoint, contains it or
// lies inside it; or when --force would replace a folder that is not a
// previous export (no manifest.json). Nothing is checked when OUT does not
// exist (then nothing is removed).
void check_export_output(const std::filesystem::path& output, const std::filesystem::path& model_dir, bool force,
                         const std::vector<CommandInput>& other_inputs = {});

// For single-file outputs (`-o FILE`): an existing target needs `force`, and
// even with it only a regular file (or a link to one) is replaced; a device
// node, FIFO, socket or folder is refused; and the output is never one of
// `inputs` (check_output_is_not_input). Throws UsageError.
void check_file_output(const std::filesystem::path& output, bool force, const std::vector<CommandInput>& inputs = {});

}  // namespace llm2hef::core
