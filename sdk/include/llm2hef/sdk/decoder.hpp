// The decoder skeleton (docs/architectures.md 1.7, 1.8): the runtime inputs, a
// loop of residual layers whose token mixer and feed-forward are pluggable,
// and the model tail (final norm, last position, lm_head). Adapters reach it
// through a description (decoder_model.hpp), which says what is specific to
// a family — module names, which mixer a layer uses, how it reads
// config.json — and nothing else.
//
// A layer is two residual branches, each `h = h + body(norm(h))` by default:
// the token mixer (attention, short conv, ...) and then the feed-forward.
// Branch and DecoderLayer carry the other placements the families use: a
// `post_norm` on the body's output before the Add (Gemma 2/3's sandwich
// norms; OLMo 2 with `pre_norm` false), a `residual_norm` after the Add
// (OPT-350m's post-LN), and `parallel` branches reading the same input
// (GPT-NeoX, Phi, StableLM). The placements do not combine: a branch with a
// `residual_norm` ignores `pre_norm` and `post_norm`, and a parallel layer
// applies only each branch's `norm` (see Branch and DecoderLayer).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/attention_block.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "llm2hef/sdk/json_file.hpp"
#include "llm2hef/sdk/short_conv.hpp"

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

// A pluggable sub-block on the normed hidden state [1, N, hidden], returning
// [1, N, hidden]: a token mixer or a feed-forward.
using Block = std::function<Value(GraphBuilder& g, const Value& x)>;

// One residual branch: h + body(norm(h)) by default. `post_norm`, when set,
// normalizes the body's output before the residual Add (Gemma 2/3's sandwich
// norms, OLMo 2); without `pre_norm` the body reads h itself (OLMo 2).
struct Branch {
  NormSpec norm;
  std::string scope;  // the body's scope, named after the HF module ("self_attn", "mlp")
  Block body;
  std::string residual;  // scope of the residual Add ("attn_residual")
  // Post-LN placement (OPT-350m): when set, the branch is
  // residual_norm(h + body(h)); `norm`, `pre_norm` and `post_norm` are not read.
  std::optional<NormSpec> residual_norm = std::nullopt;
  // Gemma: h + post_norm(body(norm(h))); with pre_norm false (OLMo 2),
  // h + post_norm(body(h)). Not read in a parallel layer.
  std::optional<NormSpec> post_norm = std::nullopt;
  bool pre_norm = true;  // false: `norm` is not applied (not read in a parallel layer)
};

// How a parallel layer sums its two branches. Float addition is commutative
// but not associative, so the grouping follows the reference exactly.
enum class ParallelSum {
  branches_first,  // (mixer + ffn) + h: GPT-NeoX, Phi
  residual_first,  // (h + mixer) + ffn: StableLM
};

struct DecoderLayer {
  Branch mixer;  // attention, short conv, ...
  Branch ffn;    // MLP / feed-forward
  // Parallel residual (GPT-NeoX, Phi, StableLM):
  // h = h + mixer(norm_1(h)) + ffn(norm_2(h)), both branches reading the
  // layer's input. An ffn norm with an empty scope reuses the mixer's normed
  // input (one shared norm, as Phi-2's input_layernorm). The Adds are named
  // after mixer.residual and ffn.residual. Only each branch's `norm` is
  // applied: `pre_norm`, `post_norm` and `residual_norm` are not read.
  bool parallel = false;
  ParallelSum sum = ParallelSum::branches_first;
};

// Layers 0..count-1 on `hidden`, layer i in scope "layers.<i>" and built as
// `layer(i)` describes it.
Value decoder_layers(GraphBuilder& g, const Checkpoint& ckpt, Value hidden, int64_t count,
                     const std::function<DecoderLayer(int64_t)>& layer);

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

// ---- ready-made mixers and feed-forwards ----
// Each captures `ckpt` and the tables by reference: use them while those live.

// Attention whose q, k and v come from `project(g, x, part)` (part 0 q, 1 k,
// 2 v), each built in scope q_proj / k_proj / v_proj: a fused projection
// split at export (Phi-3's qkv_proj, GPT-NeoX's query_key_value).
using QkvProjector = std::function<Value(GraphBuilder& g, const Value& x, int part)>;
Block fused_qkv_attention_mixer(const Checkpoint& ckpt, const DecoderInputs& io, AttentionBlockSpec spec,
                                QkvProjector project);
Block short_conv_mixer(const Checkpoint& ckpt, const CausalShifts& shifts, ShortConvSpec spec);
Block swiglu_ffn(const Checkpoint& ckpt, SwigluSpec spec);
Block gelu_ffn(const Checkpoint& ckpt, GeluMlpSpec spec);
Block relu_ffn(const Checkpoint& ckpt, ReluMlpSpec spec);

}  // namespace llm2hef::sdk
