#include "llm2hef/sdk/llama_family.hpp"

#include <cmath>

#include "llm2hef/sdk/attention_block.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/rope.hpp"

namespace llm2hef::sdk {

LlamaFamily read_llama_family(const Checkpoint& ckpt) {
  const JsonFile& c = ckpt.config();
  LlamaFamily m;
  m.hidden = c.get_size("hidden_size");
  m.layers = c.get_size("num_hidden_layers");
  m.heads = c.get_size("num_attention_heads");
  m.kv_heads = c.find_size("num_key_value_heads", m.heads);
  if (!c.has("head_dim") && m.hidden % m.heads != 0)
    throw BadInput(c.where("hidden_size") + ": " + std::to_string(m.hidden) + " is not divisible by num_attention_heads " +
                   std::to_string(m.heads) + " (and no head_dim is given)");
  m.head_dim = c.find_size("head_dim", m.hidden / m.heads);
  m.intermediate = c.get_size("intermediate_size");
  m.vocab = c.get_size("vocab_size");
  m.max_positions = c.find_int("max_position_embeddings").value_or(0);
  m.rms_eps = static_cast<float>(c.find_number("rms_norm_eps").value_or(1e-6));
  if (m.heads % m.kv_heads != 0)
    throw BadInput(c.where("num_key_value_heads") + ": " + std::to_string(m.kv_heads) +
                   " does not divide num_attention_heads " + std::to_string(m.heads));
  const std::string act = c.find_string("hidden_act").value_or("silu");
  if (act != "silu") throw Unsupported(c.where("hidden_act") + ": '" + act + "' is not supported (SwiGLU with silu only)");
  if (c.find_bool("mlp_bias").value_or(false)) throw Unsupported(c.where("mlp_bias") + ": MLP biases are not supported");
  // A window would have to live in the runtime's mask, which has no such setting.
  if (c.find_bool("use_sliding_window").value_or(false))
    throw Unsupported(c.where("use_sliding_window") + ": sliding-window attention is not supported by the Hailo runtime's mask");
  if (c.find_bool("attention_bias").value_or(false)) {
    m.qkv_bias = m.o_bias = true;
    m.rewrites.push_back("attention biases on q/k/v/o projections");
  }
  m.inv_freq = rope_inv_freq(c, m.head_dim, m.rewrites);
  m.rope_layers.assign(static_cast<size_t>(m.layers), true);

  ckpt.expect(m.embed(), {m.vocab, m.hidden});
  const bool tied = c.find_bool("tie_word_embeddings").value_or(true);
  if (ckpt.has("lm_head.weight")) {
    ckpt.expect("lm_head.weight", {m.vocab, m.hidden});
    m.lm_head = "lm_head.weight";
  } else if (tied) {
    m.lm_head = m.embed();
  } else {
    throw BadInput(c.where("tie_word_embeddings") + ": false, but the checkpoint has no lm_head.weight");
  }
  m.rewrites.push_back(m.lm_head == m.embed() ? "tied lm_head written as its own tensor after a last-position slice"
                                              : "lm_head after a last-position slice");
  m.rewrites.push_back("GQA " + std::to_string(m.heads) + "/" + std::to_string(m.kv_heads) +
                       " through a constant repeat-interleave MatMul; RoPE through a constant rotate-half MatMul");
  return m;
}

Plan llama_family_plan(const LlamaFamily& m, const ExportOptions& opt) {
  Plan p;
  p.dims = {m.hidden, m.layers, m.vocab, m.heads, m.kv_heads, m.head_dim, m.intermediate};
  p.theta = rope_theta_resource(m.inv_freq);
  p.pe_q_tiles = m.heads;
  p.pe_k_tiles = m.kv_heads;
  p.embedding_tensor = m.embed();
  p.lm_head_shards = choose_lm_head_shards(m.vocab, opt.lm_head_shards, p.lm_head_shard_reason);
  p.rewrites = m.rewrites;
  if (m.max_positions > 0 && opt.cache_size > m.max_positions)
    p.notes.push_back("--cache " + std::to_string(opt.cache_size) + " exceeds max_position_embeddings " +
                      std::to_string(m.max_positions) + ": quality beyond it is the model's own");
  return p;
}

void build_llama_family_graph(const Checkpoint& ckpt, const Plan& plan, const LlamaFamily& m, GraphBuilder& g) {
  const int64_t n = plan.cache_size, d = m.head_dim;
  auto model = g.scope("model");
  RuntimeInputs in = declare_runtime_inputs(g, plan);
  PeTables pe = tile_pe_tables(g, in, plan);
  Value hidden = in.embeds;
  const float score_divisor = static_cast<float>(std::sqrt(static_cast<double>(d)));

  for (int64_t i = 0; i < m.layers; ++i) {
    auto ls = g.scope("layers." + std::to_string(i));
    const std::string p = m.layer(i);
    Value a;
    {
      auto s = g.scope("input_layernorm");
      a = rms_norm(g, ckpt, hidden, p + "input_layernorm.weight", m.rms_eps);
    }
    Value attn;
    {
      auto s = g.scope("attn");
      attn = attention_block(g, ckpt, a, in.mask, pe,
                             {.prefix = p + "self_attn.",
                              .q_norm = m.qk_norm ? "q_norm" : "",
                              .k_norm = m.qk_norm ? "k_norm" : "",
                              .out_proj = "o_proj",
                              .qkv_bias = m.qkv_bias,
                              .out_bias = m.o_bias,
                              .rope = m.rope_layers[static_cast<size_t>(i)],
                              .shape = {n, m.heads, m.kv_heads, d, score_divisor},
                              .norm_eps = m.rms_eps});
    }
    hidden = g.add(hidden, attn, "attn_residual/Add");
    Value x;
    {
      auto s = g.scope("post_attention_layernorm");
      x = rms_norm(g, ckpt, hidden, p + "post_attention_layernorm.weight", m.rms_eps);
    }
    Value mlp;
    {
      auto s = g.scope("mlp");
      mlp = swiglu_mlp(g, ckpt, x,
                       {p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight", "gate_proj",
                        "up_proj", "down_proj"});
    }
    hidden = g.add(hidden, mlp, "mlp_residual/Add");
  }
  Value normed;
  {
    auto s = g.scope("norm");
    normed = rms_norm(g, ckpt, hidden, "model.norm.weight", m.rms_eps);
  }
  Value last = last_position(g, normed);
  auto s = g.scope("lm_head");
  Value head = g.weight("weight", ckpt, m.lm_head, {.transpose = true});
  g.output(g.matmul(last, head), "logits");
}

}  // namespace llm2hef::sdk
