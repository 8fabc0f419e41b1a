// calibrate.py: activation ranges, the precision plan and the fake-quantization
// proxy of the DFC, run by `llm2hef calibrate` under onnxruntime
// (docs/quantization.md). Its source is core/src/dfc/calibrate.py, compiled
// in; like compile.py it reads manifest.json and the files beside it.
#pragma once

#include <string>
#include <string_view>

#include "llm2hef/core/manifest/export_manifest.hpp"

namespace llm2hef::core {

inline constexpr const char* kCalibrateScriptName = "calibrate.py";

std::string calibrate_script(const ExportManifest& manifest);

// core/src/dfc/calibrate.py as it is in the source tree (without the header
// calibrate_script() adds): compile.py takes its prompt-file block from it.
std::string_view calibrate_script_source();

}  // namespace llm2hef::core

#include <cstdint>
#include <filesystem>

namespace llm2hef::core {

// A byte count as users write it: "1500000", "512MiB", "1.5GB", "64 KiB"
// (SI units are powers of 1000, IEC ones of 1024). Throws UsageError naming
// `option` on anything else, a negative value or more than 2^62 bytes.
int64_t parse_byte_size(const std::string& text, const std::string& option);

// The largest --calib-tokens / --eval-tokens file (docs/reliability.md,
// "Size limits"): about 2.8 million token ids, 1,300 prompts at cache 2048,
// each of which calibrate runs through onnxruntime (compile.py's default
// calibration set, 64 such prompts, is under 1 MB). It also bounds what
// calibrate.py's json.load builds from the file.
inline constexpr std::size_t kMaxTokenFileBytes = std::size_t{16} << 20;

// A --calib-tokens / --eval-tokens file: a JSON list of non-empty-or-empty
// lists of token ids, each in [0, vocab). Returns how many sequences hold at
// least one token. Throws BadInput naming the file and the first bad entry
// (its sequence and position), or a file over kMaxTokenFileBytes (checked
// before it is read). Checked as it is parsed, in one pass: nothing but the
// file's mapped bytes is held.
std::size_t check_token_sequences(const std::filesystem::path& path, int64_t vocab);

}  // namespace llm2hef::core
