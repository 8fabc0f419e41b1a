// Decoders whose branches normalize their own output before the residual Add
// (architectures.md section 8): Gemma 2 and Gemma 3 put a norm before and
// after both the attention and the MLP ("sandwich" norms: input_layernorm,
// post_attention_layernorm, pre_feedforward_layernorm,
// post_feedforward_layernorm); OLMo 2 keeps only the two after
// (h = h + norm(attn(h))). One reading serves the three families: each
// adapter reads its config quirks into a PostNormDecoder, which
// describe_post_norm_decoder() turns into the decoder description
// (decoder_model.hpp) its DecoderAdapter checks, plans and builds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/decoder_model.hpp"

namespace llm2hef::sdk {

enum class QkNorm {
  none,
  per_head,    // Gemma 3 (as Qwen3): RMSNorm over each head's head_dim
  full_width,  // OLMo 2: RMSNorm over all of q (heads*head_dim) and all of k (kv_heads*head_dim)
};

struct PostNormDecoder : DecoderDims {  // hidden, layers, heads, kv_heads, head_dim, vocab, max_positions
  int64_t intermediate = 0;
  float rms_eps = 1e-6f;
  bool pre_norms = true;          // input_layernorm / pre_feedforward_layernorm (Gemma); false: OLMo 2
  float norm_weight_offset = 0;   // 1: every RMSNorm scales by (1 + w) (Gemma)
  float embed_scale = 0;          // > 0: the embeddings are multiplied by it in the graph (Gemma: sqrt(hidden))
  QkNorm qk_norm = QkNorm::none;
  float score_divisor = 0;        // divides q k^T (sqrt(query_pre_attn_scalar) for Gemma, sqrt(head_dim) else)
  float attn_softcap = 0;         // > 0: attention logits capped as tanh(s / c) * c (Gemma 2)
  float final_softcap = 0;        // > 0: output logits capped the same way
  bool geglu = false;             // MLP down(gelu_tanh(gate) * up) (Gemma); false: SwiGLU
  std::vector<std::vector<float>> rope_bases;  // inv_freq of each RoPE base (rope_bases.hpp)
  std::vector<int64_t> layer_base;             // per layer: index into rope_bases
  int64_t sliding_window = 0;     // > 0: the window of the layers marked sliding
  std::vector<bool> sliding_layers;
  LmHead lm_head;
  TensorTable tensors;  // the embedding and the lm_head; the layers' rows come from their specs
  std::vector<std::string> applied_keys;  // forward keys the member applies (refused early by the member)
  std::vector<std::string> rewrites;
  std::vector<std::string> notes;

  std::string embed() const { return "model.embed_tokens.weight"; }
  std::string layer(int64_t i) const { return "model.layers." + std::to_string(i) + "."; }
};

// The keys all three share: sizes (head_dim from config.json when given),
// intermediate_size, rms_norm_eps, tie_word_embeddings; checks the embedding
// and head tensors. Refuses attention_bias (no released member has biases
// and no fixture checks them) and mlp_bias.
PostNormDecoder read_post_norm_decoder(const Checkpoint& ckpt);

// The description of a reading: every layer (sandwich or post-only norms,
// attention with its QK-Norm and RoPE base, SwiGLU or GeGLU), the tail, the
// sliding-window layers with the --sliding-window band option, theta.
DecoderModel describe_post_norm_decoder(const PostNormDecoder& m);

}  // namespace llm2hef::sdk
