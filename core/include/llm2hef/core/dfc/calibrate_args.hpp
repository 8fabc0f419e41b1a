// What `llm2hef calibrate` checks in its arguments before calibrate.py runs
// (core/src/dfc/calibrate_args.cpp): byte sizes as users write them and the
// token-id files, so that a bad argument is refused before any work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

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
