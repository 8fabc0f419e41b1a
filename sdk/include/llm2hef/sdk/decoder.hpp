// The decoder skeleton (docs/architectures.md 1.7, 1.8): reading the sizes
// config.json gives, the runtime inputs, the residual norms and the model
// tail (final norm, last position, lm_head). A layer between them is
// described by decoder_layer.hpp; adapters reach both through a description
// (decoder_model.hpp), which says what is specific to a family -- module
// names, which mixer a layer uses, how it reads config.json -- and nothing
// else.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::sdk {

// ---- reading config.json ----

// The sizes every decoder with Llama-style attention reads the same way
// (Llama family, LFM2): hidden_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads (default: heads), head_dim (default hidden/heads),
// vocab_size, max_position_embeddings (0 when absent). Checks that the
// default head_dim divides evenly and that kv heads divide the heads.
struct DecoderDims {
  int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  int64_t max_positions = 0;
};
DecoderDims read_decoder_dims(const JsonFile& config);

// The lm_head: `lm_head.weight` when the checkpoint has it (checked to be
// [vocab, hidden]), else the embedding when the model ties them (the first of
// `tie_keys` present in config.json decides; absent = tied, HF's default).
// Throws BadInput when untied and lm_head.weight is missing.
struct LmHead {
  std::string tensor;
  bool tied = false;  // true: the embedding serves as the head
};
LmHead choose_lm_head(const Checkpoint& ckpt, const std::string& embedding, int64_t vocab, int64_t hidden,
                      const std::vector<std::string>& tie_keys = {"tie_word_embeddings"});

// The rewrite every decoder with Llama-style attention reports: GQA and RoPE
// as constant MatMuls.
void note_gqa_and_rope_rewrite(std::vector<std::string>& rewrites, int64_t heads, int64_t kv_heads);

// config.json's activation under `key`, which must be one of `allowed` (the
// first is the default when the key is absent); Unsupported naming the key
// and value otherwise, with `supported` saying what is.
std::string read_activation(const JsonFile& config, const std::string& key, std::initializer_list<const char*> allowed,
                            const std::string& supported);

// ---- the plan ----

// The Plan fields every decoder fills the same way: dims, the pe tiles (q tables once per head, k tables once per kv
// head), the embedding tensor and the lm_head shards.
Plan decoder_plan(const ModelDims& dims, const std::string& embedding, const ExportOptions& options);

// A note when --cache exceeds max_position_embeddings (0 = unknown: no note).
void note_cache_beyond_positions(Plan& plan, const ExportOptions& options, int64_t max_positions);

// ---- the graph ----

// The six runtime inputs and the pe tables tiled per head, in that order.
struct DecoderInputs {
  RuntimeInputs runtime;
  PeTables pe;
};
DecoderInputs decoder_inputs(GraphBuilder& g, const Plan& plan);

// A norm of the residual stream, in its own scope: LayerNorm (weight and
// bias) when `bias` is set, RMSNorm (weight) otherwise. A LayerNorm whose
// `weight` and `*bias` are both empty has no elementwise affine (OPT's
// layer_norm_elementwise_affine false): scale 1 and bias 0 as constants.
struct NormSpec {
  std::string scope;  // named after the HF module: "input_layernorm", "ln_1", "operator_norm"
  std::string weight;
  std::optional<std::string> bias;
  float eps = 1e-6f;
  float weight_offset = 0.0f;  // RMSNorm only: 1 scales by (1 + w) (Gemma)
};
Value apply_norm(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const NormSpec& spec);

// The model tail: the final norm (optional: OPT-350m has none), an optional
// projection (OPT's project_out, [out, in]), the last position, then the
// lm_head (the head tensor transposed, in scope "lm_head", a logit scale
// folded in: Granite's 1/logits_scaling) as the graph output "logits". The
// logits stay one output here; the HAR fixup splits them into the plan's
// lm_head_shards. A `logit_softcap` > 0 caps the logits as
// tanh(logits / c) * c (Gemma's final_logit_softcapping).
struct TailSpec {
  std::optional<NormSpec> final_norm = std::nullopt;
  std::string lm_head = {};
  float logit_scale = 1.0f;
  std::string project_out = {};  // "" = none; applied after the final norm, in scope "project_out"
  float logit_softcap = 0.0f;    // > 0: tanh(logits / c) * c
  std::optional<std::string> lm_head_bias = std::nullopt;  // [vocab], added to the logits (Phi)
};
void decoder_tail(GraphBuilder& g, const Checkpoint& ckpt, const Value& hidden, const TailSpec& tail);

}  // namespace llm2hef::sdk
