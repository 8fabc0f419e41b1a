#include "llm2hef/sdk/post_norm_decoder.hpp"

#include <cmath>

#include "llm2hef/sdk/attention_block.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/rope_bases.hpp"
#include "llm2hef/sdk/sliding_window.hpp"
#include "llm2hef/sdk/sliding_window_band.hpp"

namespace llm2hef::sdk {

PostNormDecoder read_post_norm_decoder(const Checkpoint& ckpt) {
  const JsonFile& c = ckpt.config();
  PostNormDecoder m;
  static_cast<DecoderDims&>(m) = read_decoder_dims(c);
  m.intermediate = c.get_size("intermediate_size");
  m.rms_eps = static_cast<float>(checked_number_or(c, "rms_norm_eps", 1e-6, kNormEpsilon));
  // No released Gemma 2/3 or OLMo 2 has biases, and no fixture could check
  // them: refused rather than guessed.
  if (c.find_bool("attention_bias").value_or(false))
    throw Unsupported(c.where("attention_bias") + ": true is not supported (q/k/v/o biases)");
  if (c.find_bool("mlp_bias").value_or(false)) throw Unsupported(c.where("mlp_bias") + ": MLP biases are not supported");
  m.score_divisor = static_cast<float>(std::sqrt(static_cast<double>(m.head_dim)));
  m.lm_head = read_lm_head(ckpt, m.embed(), m.vocab, m.hidden, m.rewrites);
  note_gqa_and_rope_rewrite(m.rewrites, m.heads, m.kv_heads);
  return m;
}

void check_post_norm_decoder_tensors(const Checkpoint& ckpt, const PostNormDecoder& m) {
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  if (m.rope_bases.empty() || m.layer_base.size() != static_cast<size_t>(m.layers))
    throw InternalError("post-norm decoder: RoPE bases not set for every layer");
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = m.layer(i);
    if (m.pre_norms) {
      ckpt.expect(p + "input_layernorm.weight", {m.hidden});
      ckpt.expect(p + "pre_feedforward_layernorm.weight", {m.hidden});
    }
    ckpt.expect(p + "post_attention_layernorm.weight", {m.hidden});
    ckpt.expect(p + "post_feedforward_layernorm.weight", {m.hidden});
    ckpt.expect(p + "self_attn.q_proj.weight", {q, m.hidden});
    ckpt.expect(p + "self_attn.k_proj.weight", {kv, m.hidden});
    ckpt.expect(p + "self_attn.v_proj.weight", {kv, m.hidden});
    ckpt.expect(p + "self_attn.o_proj.weight", {m.hidden, q});
    if (m.qk_norm == QkNorm::per_head) {
      ckpt.expect(p + "self_attn.q_norm.weight", {m.head_dim});
      ckpt.expect(p + "self_attn.k_norm.weight", {m.head_dim});
    } else if (m.qk_norm == QkNorm::full_width) {
      ckpt.expect(p + "self_attn.q_norm.weight", {q});
      ckpt.expect(p + "self_attn.k_norm.weight", {kv});
    }
    ckpt.expect(p + "mlp.gate_proj.weight", {m.intermediate, m.hidden});
    ckpt.expect(p + "mlp.up_proj.weight", {m.intermediate, m.hidden});
    ckpt.expect(p + "mlp.down_proj.weight", {m.hidden, m.intermediate});
  }
  ckpt.expect("model.norm.weight", {m.hidden});
}

OptionSpec sliding_window_option() {
  return {kSlidingWindowOption, {"refuse", "band"}, "refuse",
          "when --cache exceeds sliding_window: refuse (the largest exact cache is the window), or band = a constant "
          "band in the sliding layers (exact in fp32, unproven on the DFC)"};
}

Plan post_norm_decoder_plan(const PostNormDecoder& m, const ExportOptions& opt) {
  Plan p = rope_decoder_plan({m.hidden, m.layers, m.vocab, m.heads, m.kv_heads, m.head_dim, m.intermediate},
                             m.embed(), opt, rope_bases_theta(m.rope_bases), m.rewrites, m.max_positions);
  p.notes.insert(p.notes.begin(), m.notes.begin(), m.notes.end());
  // The SDK's window policy (exact at --cache <= window, else refused),
  // unless the user asks for the constant band (exact, unproven on the DFC).
  SlidingWindow window{m.sliding_window, m.sliding_layers, "config.json: field 'sliding_window'"};
  if (window.layers.size() != static_cast<size_t>(m.layers)) window.layers.assign(static_cast<size_t>(m.layers), false);
  const auto chosen = opt.adapter_options.find(kSlidingWindowOption);
  const bool band = chosen != opt.adapter_options.end() && chosen->second == "band";
  if (!band || opt.cache_size <= m.sliding_window) {
    apply_sliding_window(p, opt, window, "--sliding-window band: exact in fp32 but unproven on the DFC");
  } else if (window.any()) {
    const std::string w = std::to_string(m.sliding_window), n = std::to_string(opt.cache_size);
    p.options[kSlidingWindowOption] = "band";
    p.rewrites.push_back("sliding-window layers (" + window.layer_list() + "): a constant band blocks keys " + w +
                         " or more positions back, added after the shared mask (--sliding-window band)");
    p.notes.push_back("--cache " + n + " > sliding_window " + w +
                      ": the window is a constant [SEQ, SEQ] band added to the scores of the sliding layers; exact "
                      "in fp32 on the exported graph, UNPROVEN on the DFC (that it keeps the band aligned with the "
                      "rows of its prefill and token-by-token groups); --cache " + w + " or less needs no band");
  }
  return p;
}

void build_post_norm_decoder_graph(const Checkpoint& ckpt, const Plan& plan, const PostNormDecoder& m,
                                   GraphBuilder& g) {
  auto model = g.scope("model");
  const DecoderInputs io = decoder_inputs(g, plan);
  const std::vector<PeTables> pe = select_rope_bases(g, io.pe, static_cast<int64_t>(m.rope_bases.size()), m.heads,
                                                     m.kv_heads, m.head_dim);
  std::optional<Value> band;
  if (plan.options.value(kSlidingWindowOption, "") == "band")
    band = sliding_window_band(g, plan.cache_size, m.sliding_window);
  Value embeds = io.runtime.embeds;
  if (m.embed_scale > 0) {
    // HF multiplies the looked-up rows (Gemma's scaled embedding); the
    // runtime feeds them raw from embeddings.bin, so the graph does it.
    auto s = g.scope("embed_tokens");
    const Value scale = g.scalar("embed_scale", m.embed_scale);
    embeds = g.mul(embeds, scale);
  }
  const Value hidden = decoder_layers(g, ckpt, embeds, m.layers, [&](int64_t i) {
    const std::string p = m.layer(i);
    auto norm = [&](const std::string& name) {
      return NormSpec{name, p + name + ".weight", std::nullopt, m.rms_eps, m.norm_weight_offset};
    };
    const bool qk = m.qk_norm != QkNorm::none;
    const AttentionBlockSpec attn{
        .prefix = p + "self_attn.",
        .q_norm = qk ? "q_norm" : "",
        .k_norm = qk ? "k_norm" : "",
        .out_proj = "o_proj",
        .shape = {plan.cache_size, m.heads, m.kv_heads, m.head_dim, m.score_divisor, m.attn_softcap,
                  m.sliding_layers.empty() || !m.sliding_layers[static_cast<size_t>(i)] ? std::nullopt : band},
        .norm_eps = m.rms_eps,
        .qk_norm_full_width = m.qk_norm == QkNorm::full_width,
        .norm_weight_offset = m.norm_weight_offset};
    const PeTables& tables = pe.at(static_cast<size_t>(m.layer_base.at(static_cast<size_t>(i))));
    Block attention = [&ckpt, &io, &tables, attn](GraphBuilder& gb, const Value& x) {
      return attention_block(gb, ckpt, x, io.runtime.mask, tables, attn);
    };
    const SwigluSpec mlp{p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight",
                         "gate_proj", "up_proj", "down_proj"};
    Block ffn = [&ckpt, mlp, geglu = m.geglu](GraphBuilder& gb, const Value& x) {
      return geglu ? geglu_mlp(gb, ckpt, x, mlp) : swiglu_mlp(gb, ckpt, x, mlp);
    };
    return DecoderLayer{Branch{.norm = norm("input_layernorm"),
                               .scope = "attn",
                               .body = attention,
                               .residual = "attn_residual",
                               .post_norm = norm("post_attention_layernorm"),
                               .pre_norm = m.pre_norms},
                        Branch{.norm = norm("pre_feedforward_layernorm"),
                               .scope = "mlp",
                               .body = ffn,
                               .residual = "mlp_residual",
                               .post_norm = norm("post_feedforward_layernorm"),
                               .pre_norm = m.pre_norms}};
  });
  decoder_tail(g, ckpt, hidden, {"norm", "model.norm.weight", std::nullopt, m.rms_eps, m.norm_weight_offset},
               m.lm_head.tensor, m.final_softcap);
}

}  // namespace llm2hef::sdk
