// The Llama-family decoder (architectures.md section 1) as one table-driven
// builder: Llama, Qwen2, Qwen3 and SmolLM3 differ only in the fields below,
// so each adapter reads its config quirks into a LlamaFamily and calls these.
#pragma once

#include <string>
#include <vector>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "llm2hef/sdk/scalar_multipliers.hpp"
#include "llm2hef/sdk/sliding_window.hpp"

namespace llm2hef::sdk {

struct LlamaFamily : DecoderDims {  // hidden, layers, heads, kv_heads, head_dim, vocab, max_positions
  int64_t intermediate = 0;
  float rms_eps = 1e-6f;
  std::vector<float> inv_freq;   // RoPE frequencies, scaling folded in
  std::vector<bool> rope_layers; // per layer: true = RoPE applied (SmolLM3 has NoPE layers)
  bool qkv_bias = false;         // Qwen2; Llama with attention_bias
  bool o_bias = false;           // Llama with attention_bias
  bool qk_norm = false;          // Qwen3: per-head RMSNorm on q and k before RoPE
  LmHead lm_head;                // lm_head.weight, or the embedding when tied
  SlidingWindow sliding;         // read for every member; refused in the plan where it would bite
  ScalarMultipliers multipliers; // Granite; neutral otherwise
  bool nope_read = false;        // SmolLM3: no_rope_layers / no_rope_layer_interval were applied
  std::vector<std::string> rewrites;

  std::string embed() const { return "model.embed_tokens.weight"; }
  std::string layer(int64_t i) const { return "model.layers." + std::to_string(i) + "."; }
};

// The keys every member shares: sizes, head_dim (config value, else
// hidden/heads), rms_norm_eps, tie_word_embeddings, attention_bias, RoPE with
// its scaling, and the sliding window (sdk/sliding_window.hpp) whichever
// member reads it, so forcing another adapter cannot skip the window.
// Checks the embedding and head tensors exist with the right shapes.
LlamaFamily read_llama_family(const Checkpoint& ckpt);

// Checks every layer tensor against the shapes the fields imply (call after
// the adapter's quirks are read: they decide which tensors exist).
void check_llama_family_tensors(const Checkpoint& ckpt, const LlamaFamily& m);

// Refuses every config key that changes the forward pass (the table of
// sdk/forward_keys.hpp) and that this member does not apply: Granite's
// multipliers or SmolLM3's NoPE keys read by another member, Gemma's or
// GPT-NeoX's keys on a checkpoint forced onto a Llama-family adapter, an
// mlp_bias. Call after customize().
void refuse_unread_llama_family_keys(const Checkpoint& ckpt, const LlamaFamily& m);

Plan llama_family_plan(const LlamaFamily& m, const ExportOptions& options);

void build_llama_family_graph(const Checkpoint& ckpt, const Plan& plan, const LlamaFamily& m, GraphBuilder& g);

}  // namespace llm2hef::sdk

namespace llm2hef::sdk {

// Base class for Llama-family adapters: the plan and the graph are shared;
// an adapter supplies info() and, where its architecture has quirks,
// customize() to adjust the shared reading of config.json.
class LlamaFamilyAdapter : public Adapter {
 public:
  Plan plan(const Checkpoint& ckpt, const ExportOptions& options) const override {
    return llama_family_plan(model(ckpt), options);
  }
  void build_graph(const Checkpoint& ckpt, const Plan& plan, GraphBuilder& graph) const override {
    build_llama_family_graph(ckpt, plan, model(ckpt), graph);
  }

 protected:
  virtual void customize(const Checkpoint& /*ckpt*/, LlamaFamily& /*m*/) const {}

 private:
  LlamaFamily model(const Checkpoint& ckpt) const {
    LlamaFamily m = read_llama_family(ckpt);
    customize(ckpt, m);
    refuse_unread_llama_family_keys(ckpt, m);
    check_llama_family_tensors(ckpt, m);
    return m;
  }
};

}  // namespace llm2hef::sdk
