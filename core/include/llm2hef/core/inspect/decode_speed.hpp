// Decode-speed estimate for the Hailo-10H (issue 36, docs/decode-speed.md):
// tokens per second from the bytes each generated token reads from the
// module's memory, with the bandwidth anchored on public figures for one model.
//
// When it generates, the Hailo-10H is bound by its on-module memory
// bandwidth (as the benchmark in arXiv:2603.23640 found), so
//   tokens/s = effective bandwidth / bytes read per generated token.
// The result is an upper bound from bandwidth alone: small models are limited
// by per-layer costs this does not model; only the chip can confirm.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace llm2hef::core {

// Bytes one weight takes on the device at each weight width. Group scales
// (weight_group_size) are ignored: a scale of a few bytes per group of 128
// 4-bit weights (64 bytes) adds a few percent, and the anchor, grouped the
// same way, leaves them out too, so they largely cancel.
inline constexpr double kWeightBytes4Bit = 0.5;
inline constexpr double kWeightBytes8Bit = 1.0;
inline constexpr double kWeightBytes16Bit = 2.0;

// What one generated token reads, before a precision is chosen. The
// embedding table is not here: the host looks tokens up (embeddings.bin).
struct DecodeReads {
  double block_weights = 0;    // on-chip weights other than the lm_head (every block's convs, norms, biases)
  double lm_head_weights = 0;  // vocab x hidden: on the chip even when tied to the embedding
  double kv_cache_bytes = 0;   // the whole cache, as inspect counts it (kv_cache_bytes below, or an adapter's)
};

// The K/V cache as inspect's memory model counts it: K and V in every layer
// after the GQA expansion (heads, not kv_heads), 1 byte per value (a8). The
// graph attends over the whole cache whatever the position (Hailo's Qwen2.5
// HEF: its cache-wide inputs are 12 heads x 2048 in both groups,
// docs/hailo-contract.md section 10), so every token reads all of it.
double kv_cache_bytes(int64_t layers, int64_t heads, int64_t head_dim, int64_t cache);

// Bytes per generated token: the block weights at `block_bytes` and the
// lm_head at `lm_head_bytes` per weight, plus the KV cache.
double bytes_per_token(const DecodeReads& reads, double block_bytes, double lm_head_bytes);

struct DecodeSpeed {
  double bytes_per_token = 0;
  double tokens_per_s_low = 0;   // at the lower anchored bandwidth
  double tokens_per_s_high = 0;  // at the higher one
};

// tokens/s at the anchored bandwidths (decode_bandwidth) for this many bytes
// per token (> 0).
DecodeSpeed decode_speed(double bytes_per_token);

// The anchor's shape: a dense pre-norm decoder with SwiGLU MLP, two RMSNorms
// per block and a final one.
struct DenseDecoderShape {
  int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0, vocab = 0;
  bool qkv_bias = false;  // q, k and v projections carry biases (Qwen2)
};

// What a token of such a decoder reads at `cache`, counted as inspect counts
// a checkpoint's tensors.
DecodeReads dense_decoder_reads(const DenseDecoderShape& shape, int64_t cache);

// Qwen2-1.5B-Instruct (its config.json) at cache 2048 under Hailo's recipe.
DenseDecoderShape anchor_shape();
inline constexpr int64_t kAnchorCache = 2048;
// The public decode speeds the anchor had (docs/decode-speed.md, "The anchor").
inline constexpr double kAnchorTokensPerSecondHigh = 9.45;  // Hailo's figure for Qwen2-1.5B on the Hailo-10H
inline constexpr double kAnchorTokensPerSecondLow = 6.9;    // arXiv:2603.23640: Qwen2.5-1.5B 4-bit, Raspberry Pi 5

// Weight widths in Hailo's own recipe (the model script in its
// qwen2_1.5b_instruct.q.har; l-nmch/hailo-10h-llm-compiler
// recipes/hailo-qwen2-1.5b-instruct.alls): every block conv at 4-bit weights
// (a8_w4; down_proj a16_w4_a16), and the lm_head too:
// quantization_param([.../conv225_d0, ..., .../conv225_d3], precision_mode=a8_w4),
// its four shards after llm_modifications (4 x 37984 = vocab 151936).
inline constexpr double kHailoRecipeBlockBytes = kWeightBytes4Bit;
inline constexpr double kHailoRecipeLmHeadBytes = kWeightBytes4Bit;

// The anchor's bytes per token, through bytes_per_token, at Hailo's recipe.
double anchor_bytes_per_token();

// Effective bandwidth in bytes/s, {low, high}: the anchor's two speeds times
// its bytes per token.
std::pair<double, double> decode_bandwidth();

// Bytes per weight at a precision mode's weight width ("a8_w4",
// "a16_w4_a16": 0.5; "a8_w8", "a16_w8": 1; "a16_w16": 2). InternalError for
// a mode without one (modes are checked when a plan is read).
double weight_bytes_of_mode(std::string_view mode);

// A precision plan's weights: its default mode for every compressible weight,
// plus the bytes its lines add (calibrate's budget.extra_weight_bytes).
struct PlanWeights {
  double default_bytes_per_weight = kWeightBytes4Bit;
  double extra_weight_bytes = 0;
};

// inspect's "decode_speed": rows "default" (every on-chip weight 4-bit, as
// llm2hef's model script writes), "hailo_recipe" (Hailo's recipe's widths,
// above), "all_8bit", and "plan" when one is given; each with
// bytes_per_token, tokens_per_s_low and tokens_per_s_high. Also the anchored
// bandwidth, "anchor" and "assumptions" text.
nlohmann::json decode_speed_report(const DecodeReads& reads, const std::optional<PlanWeights>& plan);

}  // namespace llm2hef::core
