// What `--force` may replace. Replacing an output removes what was there, so
// before anything is written the target is checked against the inputs of the
// run and against what the command itself writes: a user who mistypes `-o`
// must get an error, never a deleted checkpoint.
#pragma once

#include <filesystem>

namespace llm2hef::core {

// For `export -o OUT [--force]` reading `model_dir`. Throws UsageError when
// OUT exists and is not a folder; when OUT is the checkpoint, contains it or
// lies inside it; or when --force would replace a folder that is not a
// previous export (no manifest.json). Nothing is checked when OUT does not
// exist (then nothing is removed).
void check_export_output(const std::filesystem::path& output, const std::filesystem::path& model_dir, bool force);

// For single-file outputs (`-o FILE`): an existing target needs `force`, and
// even with it only a regular file (or a link to one) is replaced; a device
// node, FIFO, socket or folder is refused. Throws UsageError.
void check_file_output(const std::filesystem::path& output, bool force);

}  // namespace llm2hef::core
