// ggml's block formats to float32.
//
// Each quantized type stores `block_size` values in `type_size` bytes
// (gguf_file.hpp GgmlType); the layouts are ggml's (ggml-common.h block_q4_0
// ... block_q6_K), and the arithmetic is done in float32 in the order ggml's
// reference dequantize_row_* and gguf-py's quants.py use, so the result is
// the same to the bit (tests/unit/test_gguf.cpp compares with values
// gguf-py wrote).
#pragma once

#include <cstddef>
#include <cstdint>

#include "llm2hef/core/checkpoint/gguf_file.hpp"

namespace llm2hef::core {

// Converts `n_blocks` blocks of type `t` starting at `src` (no alignment
// needed) into `out` (n_blocks * t.block_size floats). InternalError for a
// type whose `dequantized` is false: callers refuse those with the tensor's
// name before reading.
void dequantize_blocks(const GgmlType& t, const uint8_t* src, size_t n_blocks, float* out);

}  // namespace llm2hef::core
