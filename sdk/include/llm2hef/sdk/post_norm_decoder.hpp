// Decoders whose branches normalize their own output before the residual Add
// (architectures.md section 8): Gemma 2 and Gemma 3 put a norm before and
// after both the attention and the MLP ("sandwich" norms: input_layernorm,
// post_attention_layernorm, pre_feedforward_layernorm,
// post_feedforward_layernorm); OLMo 2 keeps only the two after
// (h = h + norm(attn(h))). One table-driven builder serves the three
// families: each adapter reads its config quirks into a PostNormDecoder.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/graph_builder.hpp"

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

// Checks every layer tensor against the shapes the fields imply.
void check_post_norm_decoder_tensors(const Checkpoint& ckpt, const PostNormDecoder& m);

// The adapter option that lets sliding-window layers go beyond their window:
// "refuse" (default) or "band" (sliding_window_band.hpp).
inline constexpr const char* kSlidingWindowOption = "sliding-window";
OptionSpec sliding_window_option();

// The plan: the theta of all RoPE bases (rope_bases.hpp), the notes. With
// sliding-window layers, a --cache above the window is refused (Unsupported,
// naming the largest exact cache: the runtime's one shared mask cannot hold
// a per-layer window) unless --sliding-window band asks for the constant
// band; at or below it every layer is global and exact.
Plan post_norm_decoder_plan(const PostNormDecoder& m, const ExportOptions& options);

void build_post_norm_decoder_graph(const Checkpoint& ckpt, const Plan& plan, const PostNormDecoder& m,
                                   GraphBuilder& g);

// Base class of the adapters: plan and graph are shared; an adapter supplies
// info() and customize(), which reads its family's keys into `m`.
class PostNormDecoderAdapter : public Adapter {
 public:
  Plan plan(const Checkpoint& ckpt, const ExportOptions& options) const override {
    return post_norm_decoder_plan(model(ckpt), options);
  }
  void build_graph(const Checkpoint& ckpt, const Plan& plan, GraphBuilder& graph) const override {
    build_post_norm_decoder_graph(ckpt, plan, model(ckpt), graph);
  }

 protected:
  virtual void customize(const Checkpoint& ckpt, PostNormDecoder& m) const = 0;

 private:
  PostNormDecoder model(const Checkpoint& ckpt) const {
    PostNormDecoder m = read_post_norm_decoder(ckpt);
    customize(ckpt, m);
    check_post_norm_decoder_tensors(ckpt, m);
    return m;
  }
};

}  // namespace llm2hef::sdk
