#include "llm2hef/sdk/forward_keys.hpp"

#include <algorithm>
#include <cmath>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

namespace {

using Json = nlohmann::json;

// Is `v` (present in `c`) the value that changes nothing?
using Neutral = bool (*)(const Json& v, const JsonFile& c);

bool null_or_false(const Json& v, const JsonFile&) { return v.is_null() || (v.is_boolean() && !v.get<bool>()); }
bool is_true(const Json& v, const JsonFile&) { return v.is_boolean() && v.get<bool>(); }
bool is_null(const Json& v, const JsonFile&) { return v.is_null(); }
bool is_one(const Json& v, const JsonFile&) { return v.is_number() && v.get<double>() == 1.0; }
// Present at all: the key belongs to one family and steers its forward pass
// whatever its value (Gemma's score scale, SmolLM3's NoPE layers).
bool never(const Json&, const JsonFile&) { return false; }

// A window only counts when sliding is on (Qwen2 configs carry
// sliding_window with use_sliding_window false).
bool no_window(const Json& v, const JsonFile& c) { return v.is_null() || c.find_bool("use_sliding_window") == false; }
bool all_full_attention(const Json& v, const JsonFile&) {
  if (v.is_null()) return true;
  if (!v.is_array()) return false;
  return std::all_of(v.begin(), v.end(),
                     [](const Json& t) { return t.is_string() && t.get<std::string>() == "full_attention"; });
}
int64_t config_head_dim(const JsonFile& c) {
  if (auto d = c.find_int("head_dim")) return *d;
  const auto hidden = c.find_int_any({"hidden_size", "n_embd"});
  const auto heads = c.find_int_any({"num_attention_heads", "n_head"});
  return hidden && heads && *heads > 0 ? *hidden / *heads : 0;
}
// Granite's attention_multiplier replaces 1/sqrt(head_dim).
bool default_score_scale(const Json& v, const JsonFile& c) {
  const int64_t d = config_head_dim(c);
  if (!v.is_number() || d <= 0) return false;
  const double expected = 1.0 / std::sqrt(static_cast<double>(d));
  return std::fabs(v.get<double>() - expected) <= 1e-6 * expected;
}
bool hidden_width(const Json& v, const JsonFile& c) {
  return v.is_number_integer() && c.find_int_any({"hidden_size", "n_embd"}) == v.get<int64_t>();
}

struct Row {
  ForwardKey key;
  Neutral neutral;
};

// transformers 5.24, src/transformers/models/<family>/modeling_<family>.py
// (and configuration_<family>.py where the config derives the key).
const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
      // llama, smollm3, granite, qwen3, gemma2/3, olmo2: q/k/v/o Linear(bias=config.attention_bias); gpt_neox too.
      {{"attention_bias", "biases on the q/k/v/o projections", "false"}, null_or_false},
      // llama, smollm3, granite: gate/up/down Linear(bias=config.mlp_bias).
      {{"mlp_bias", "biases on the MLP projections", "false"}, null_or_false},
      // phi, stablelm: q_layernorm / k_layernorm when config.qk_layernorm.
      {{"qk_layernorm", "a LayerNorm on q and k per head", "false"}, null_or_false},
      // stablelm: q/k/v Linear(bias=config.use_qkv_bias).
      {{"use_qkv_bias", "biases on the q/k/v projections", "false"}, null_or_false},
      // stablelm, gpt_neox: attention and MLP read the same input.
      {{"use_parallel_residual", "attention and MLP in parallel on one residual", "false"}, null_or_false},
      // modeling_rope_utils: only a fraction of each head is rotated (phi, phi3, stablelm, gpt_neox).
      {{"partial_rotary_factor", "rotary embedding on part of each head only", "1.0"}, is_one},
      // configuration_gpt_neox: the older spelling of partial_rotary_factor.
      {{"rotary_pct", "rotary embedding on part of each head only", "1.0"}, is_one},
      // gemma2 (and gemma3's config): tanh soft-capping of the attention scores and of the logits.
      {{"attn_logit_softcapping", "attention logit soft-capping", "null"}, is_null},
      {{"final_logit_softcapping", "final logit soft-capping", "null"}, is_null},
      // gemma2, gemma3: scores scaled by query_pre_attn_scalar**-0.5 instead of head_dim**-0.5.
      {{"query_pre_attn_scalar", "the attention score scale", "absent"}, never},
      // gemma2, gemma3: the MLP activation key (others read hidden_act).
      {{"hidden_activation", "the MLP activation (Gemma's key)", "absent"}, never},
      // gemma2, gemma3: a non-causal mask.
      {{"use_bidirectional_attention", "bidirectional (non-causal) attention", "false"}, null_or_false},
      // granite: four scalars.
      {{"embedding_multiplier", "a scale on the input embeddings", "1.0"}, is_one},
      {{"attention_multiplier", "the attention score scale", "1/sqrt(head_dim)"}, default_score_scale},
      {{"residual_multiplier", "a scale on each residual branch", "1.0"}, is_one},
      {{"logits_scaling", "a divisor of the logits", "1.0"}, is_one},
      // smollm3: layers without RoPE (no_rope_layers; the config derives it from the interval).
      {{"no_rope_layers", "layers without RoPE (NoPE)", "absent"}, never},
      {{"no_rope_layer_interval", "layers without RoPE (NoPE)", "absent"}, never},
      // qwen2, qwen3, smollm3, mistral, phi3, gemma: sliding-window attention.
      {{"sliding_window", "sliding-window attention", "null (or use_sliding_window false)"}, no_window},
      {{"use_sliding_window", "sliding-window attention", "false"}, null_or_false},
      // qwen2, qwen3, smollm3, gemma2/3 (attention kinds), lfm2 (conv or attention): per-layer kinds.
      {{"layer_types", "per-layer attention kinds", "every entry full_attention"}, all_full_attention},
      // gpt2: GPT2Attention.
      {{"scale_attn_weights", "scaling of the attention scores", "true"}, is_true},
      {{"scale_attn_by_inverse_layer_idx", "scores divided by the layer index + 1", "false"}, null_or_false},
      // opt: OPTDecoderLayer and OPTDecoder.
      {{"do_layer_norm_before", "pre- or post-LayerNorm", "true"}, is_true},
      {{"_remove_final_layer_norm", "no final LayerNorm", "false"}, null_or_false},
      {{"enable_bias", "biases on the projections", "true"}, is_true},
      {{"layer_norm_elementwise_affine", "LayerNorms without weight and bias", "true"}, is_true},
      {{"word_embed_proj_dim", "project_in / project_out around the decoder", "hidden_size"}, hidden_width},
      // lfm2: the short-convolution blocks.
      {{"conv_bias", "biases on the short-conv projections", "false"}, null_or_false},
      {{"conv_L_cache", "short-convolution layers (their kernel size)", "absent"}, never},
  };
  return table;
}

const Row* find_row(const std::string& key) {
  for (const Row& r : rows())
    if (key == r.key.key) return &r;
  return nullptr;
}

// The value of `key` in `c`, and where it was found; null when absent.
std::pair<const Json*, std::string> lookup(const JsonFile& c, const std::string& key) {
  const Json& raw = c.raw();
  if (raw.contains(key)) return {&raw[key], c.where(key)};
  if (key == "partial_rotary_factor")
    for (const char* dict : {"rope_parameters", "rope_scaling"})
      if (raw.contains(dict) && raw[dict].is_object() && raw[dict].contains(key))
        return {&raw[dict][key], c.where(dict) + " '" + key + "'"};
  return {nullptr, std::string()};
}

}  // namespace

UnappliedForwardKey::~UnappliedForwardKey() = default;  // the key function: type_info in the SDK library

const std::vector<ForwardKey>& forward_keys() {
  static const std::vector<ForwardKey> keys = [] {
    std::vector<ForwardKey> out;
    for (const Row& r : rows()) out.push_back(r.key);
    return out;
  }();
  return keys;
}

bool changes_forward(const JsonFile& c, const std::string& key) {
  const Row* row = find_row(key);
  if (!row) throw InternalError("changes_forward: '" + key + "' is not in the forward-key table");
  const auto [value, where] = lookup(c, key);
  return value && !row->neutral(*value, c);
}

void refuse_unapplied_forward_keys(const JsonFile& c, const std::vector<std::string>& applied) {
  // The table looks inside the rope dict (partial_rotary_factor) and the
  // readings take the RoPE from it: a dict of another type would be skipped
  // by both, and its settings lost without a word.
  for (const char* dict : {"rope_parameters", "rope_scaling"})
    if (c.raw().contains(dict) && !c.raw()[dict].is_null() && !c.raw()[dict].is_object())
      throw BadInput(c.where(dict) + ": expected an object (or null), got " + std::string(c.raw()[dict].type_name()));
  for (const std::string& key : applied)
    if (!find_row(key)) throw InternalError("an adapter names '" + key + "' as applied, but it is not a forward key");
  for (const Row& row : rows()) {
    if (std::find(applied.begin(), applied.end(), row.key.key) != applied.end()) continue;
    const auto [value, where] = lookup(c, row.key.key);
    if (!value || row.neutral(*value, c)) continue;
    throw UnappliedForwardKey(where + ": " + value->dump() + " changes the forward pass (" + row.key.what +
                                  "), which this adapter does not apply (neutral: " + row.key.neutral + ")",
                              row.key.key);
  }
}

}  // namespace llm2hef::sdk
