#include "llm2hef/core/inspect/decode_speed.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

double f(int64_t v) { return static_cast<double>(v); }

// Byte counts are whole numbers in JSON, as inspect's memory figures.
int64_t whole_bytes(double bytes) { return static_cast<int64_t>(std::llround(bytes)); }

nlohmann::json row(const char* weights, double bytes) {
  const DecodeSpeed s = decode_speed(bytes);
  return {{"weights", weights},
          {"bytes_per_token", whole_bytes(s.bytes_per_token)},
          {"tokens_per_s_low", s.tokens_per_s_low},
          {"tokens_per_s_high", s.tokens_per_s_high}};
}

std::string anchor_text() {
  const DenseDecoderShape a = anchor_shape();
  const auto [low, high] = decode_bandwidth();
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "Qwen2-1.5B-Instruct (hidden %lld, %lld layers, %lld heads / %lld KV heads x %lld, intermediate "
                "%lld, vocab %lld) at cache %lld under Hailo's own recipe (the model script in its "
                "qwen2_1.5b_instruct.q.har: every block conv and the lm_head at 4-bit weights): %.0f bytes per "
                "token. %.2f tokens/s (Hailo's figure for Qwen2-1.5B) and %.1f tokens/s (arXiv:2603.23640: "
                "Qwen2.5-1.5B, same shape, 4-bit, on a Raspberry Pi 5) give %.2f-%.2f GB/s",
                static_cast<long long>(a.hidden), static_cast<long long>(a.layers), static_cast<long long>(a.heads),
                static_cast<long long>(a.kv_heads), static_cast<long long>(a.head_dim),
                static_cast<long long>(a.intermediate), static_cast<long long>(a.vocab),
                static_cast<long long>(kAnchorCache), anchor_bytes_per_token(), kAnchorTokensPerSecondHigh,
                kAnchorTokensPerSecondLow, low / 1e9, high / 1e9);
  return buf;
}

}  // namespace

double kv_cache_bytes(int64_t layers, int64_t heads, int64_t head_dim, int64_t cache) {
  // In double: the dims are bounded by the adapter, their product is not.
  return 2.0 * f(layers) * f(heads) * f(head_dim) * f(cache);
}

double bytes_per_token(const DecodeReads& reads, double block_bytes, double lm_head_bytes) {
  return reads.block_weights * block_bytes + reads.lm_head_weights * lm_head_bytes + reads.kv_cache_bytes;
}

DecodeSpeed decode_speed(double bytes) {
  if (!(bytes > 0) || !std::isfinite(bytes))
    throw InternalError("decode_speed: " + std::to_string(bytes) + " bytes per token");
  const auto [low, high] = decode_bandwidth();
  return {bytes, low / bytes, high / bytes};
}

DecodeReads dense_decoder_reads(const DenseDecoderShape& s, int64_t cache) {
  const double q = f(s.heads) * f(s.head_dim), kv = f(s.kv_heads) * f(s.head_dim);
  double layer = f(s.hidden) * q + 2.0 * f(s.hidden) * kv + q * f(s.hidden);  // q, k, v, o
  if (s.qkv_bias) layer += q + 2.0 * kv;
  layer += 3.0 * f(s.hidden) * f(s.intermediate);  // gate, up, down
  layer += 2.0 * f(s.hidden);                      // input and post-attention RMSNorm
  DecodeReads r;
  r.block_weights = f(s.layers) * layer + f(s.hidden);  // + the final norm
  r.lm_head_weights = f(s.vocab) * f(s.hidden);
  r.kv_cache_bytes = kv_cache_bytes(s.layers, s.heads, s.head_dim, cache);
  return r;
}

DenseDecoderShape anchor_shape() {
  // Qwen/Qwen2-1.5B-Instruct config.json: hidden_size 1536, num_hidden_layers
  // 28, num_attention_heads 12, num_key_value_heads 2 (head_dim 1536/12 =
  // 128), intermediate_size 8960, vocab_size 151936, tie_word_embeddings
  // true; Qwen2's q/k/v projections have biases. 1,543,714,304 parameters.
  return {1536, 28, 12, 2, 128, 8960, 151936, true};
}

double anchor_bytes_per_token() {
  return bytes_per_token(dense_decoder_reads(anchor_shape(), kAnchorCache), kHailoRecipeBlockBytes,
                         kHailoRecipeLmHeadBytes);
}

std::pair<double, double> decode_bandwidth() {
  const double bytes = anchor_bytes_per_token();
  return {kAnchorTokensPerSecondLow * bytes, kAnchorTokensPerSecondHigh * bytes};
}

double weight_bytes_of_mode(std::string_view mode) {
  // Modes are a<bits>_w<bits>[_a<bits>] (har::known_precision_modes).
  const size_t w = mode.find("_w");
  if (w != std::string_view::npos) {
    const std::string_view bits = mode.substr(w + 2, mode.find('_', w + 2) - (w + 2));
    if (bits == "4") return kWeightBytes4Bit;
    if (bits == "8") return kWeightBytes8Bit;
    if (bits == "16") return kWeightBytes16Bit;
  }
  throw InternalError("decode speed: precision mode '" + std::string(mode) + "' has no known weight width");
}

nlohmann::json decode_speed_report(const DecodeReads& reads, const std::optional<PlanWeights>& plan) {
  const auto [low, high] = decode_bandwidth();
  nlohmann::json rows = {
      {"default", row("every on-chip weight 4-bit (llm2hef's default model script)",
                      bytes_per_token(reads, kWeightBytes4Bit, kWeightBytes4Bit))},
      {"hailo_recipe", row("block convs and lm_head 4-bit, as Hailo's own recipe (its 16-bit layers hold no weights)",
                           bytes_per_token(reads, kHailoRecipeBlockBytes, kHailoRecipeLmHeadBytes))},
      {"all_8bit", row("every on-chip weight 8-bit", bytes_per_token(reads, kWeightBytes8Bit, kWeightBytes8Bit))},
  };
  if (plan)
    rows["plan"] = row("the plan's default mode, plus its extra weight bytes",
                       bytes_per_token(reads, plan->default_bytes_per_weight, plan->default_bytes_per_weight) +
                           plan->extra_weight_bytes);
  return {{"rows", rows},
          {"bandwidth_bytes_per_s", {{"low", low}, {"high", high}}},
          {"anchor", anchor_text()},
          {"assumptions",
           "decode is bound by the module's memory bandwidth: a generated token reads every on-chip weight once at "
           "its precision (4-bit 0.5 byte, 8-bit 1, 16-bit 2; group scales ignored), the whole KV cache as "
           "counted under memory, and the lm_head; the embedding table is looked up on the host; activations are "
           "not counted. tokens/s is an upper bound from bandwidth only: small models are limited by other "
           "per-layer costs; only the chip can confirm (docs/decode-speed.md)"}};
}

}  // namespace llm2hef::core
