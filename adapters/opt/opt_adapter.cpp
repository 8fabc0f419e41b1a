// OPT (OPTForCausalLM, facebook/opt-125m .. 1.3b): architectures.md has no
// section yet; modeling_opt.py is the reference.
//
// What differs from Hugging Face, all exact:
// - embed_positions (learned, offset 2: position p reads row p + 2) moves
//   into the cos/sin channel as GPT-2's wpe does (sdk/learned_positions.hpp),
//   rows 2..N+1 for a cache of N;
// - q is scaled by head_dim^-0.5 in HF; here the scores are divided by
//   sqrt(head_dim) (the Div of the proven formulation);
// - project_in / project_out (word_embed_proj_dim != hidden_size, opt-350m)
//   are MatMuls around the decoder; the runtime feeds word_embed_proj_dim-wide
//   embedding rows, so the plan's dims.hidden is that width;
// - post-LN layers (do_layer_norm_before false, opt-350m) use the decoder
//   skeleton's residual_norm placement: norm(h + body(h)); no final norm then;
// - the tied head is written as its own tensor after a last-position slice.
#include <cmath>
#include <string>

#include "llm2hef/sdk/forward_keys.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/learned_positions.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;

constexpr int64_t kPositionOffset = 2;  // OPTLearnedPositionalEmbedding.offset
constexpr float kLayerNormEps = 1e-5f;  // nn.LayerNorm's default; OPT has no eps key

struct OptConfig {
  int64_t hidden = 0, layers = 0, heads = 0, head_dim = 0, ffn = 0, vocab = 0, positions = 0, embed_dim = 0;
  bool pre_norm = true, final_norm = true, bias = true, affine = true, project = false;
  std::string prefix;  // "model.decoder." (OPTForCausalLM) or "decoder." (older saves)
  LmHead lm_head;

  std::string embed() const { return prefix + "embed_tokens.weight"; }
  std::string layer(int64_t i) const { return prefix + "layers." + std::to_string(i) + "."; }
};

// One of OPT's switches: OPTConfig's default when absent, else true or
// false. modeling_opt tests them for truth (`if config.do_layer_norm_before:`),
// so null would mean false there while reading as "absent" elsewhere: refused.
bool opt_switch(const JsonFile& c, const char* key, bool fallback) {
  if (!c.raw().contains(key)) return fallback;
  if (!c.raw()[key].is_boolean())
    throw BadInput(c.where(key) + ": " + c.raw()[key].dump() + " is not true or false (leave the key out for " +
                   (fallback ? "true" : "false") + ", OPTConfig's default)");
  return c.raw()[key].get<bool>();
}

OptConfig read_config(const Checkpoint& ckpt) {
  const JsonFile& c = ckpt.config();
  refuse_unapplied_forward_keys(c, {"do_layer_norm_before", "_remove_final_layer_norm", "enable_bias",
                                    "layer_norm_elementwise_affine", "word_embed_proj_dim"});
  OptConfig m;
  m.hidden = c.get_size("hidden_size");
  m.layers = c.get_size("num_hidden_layers");
  m.heads = c.get_size("num_attention_heads");
  m.ffn = c.get_size("ffn_dim");
  m.vocab = c.get_size("vocab_size");
  m.positions = c.find_size("max_position_embeddings", 2048);
  m.embed_dim = c.find_size("word_embed_proj_dim", m.hidden);
  if (m.hidden % m.heads != 0)
    throw BadInput(c.where("hidden_size") + ": " + std::to_string(m.hidden) + " is not divisible by num_attention_heads " +
                   std::to_string(m.heads));
  m.head_dim = m.hidden / m.heads;
  read_activation(c, "activation_function", {"relu"}, "OPT's relu only");
  m.pre_norm = opt_switch(c, "do_layer_norm_before", true);
  // modeling_opt.py: the decoder's final_layer_norm exists only with pre-LN
  // layers and without the backward-compatibility flag _remove_final_layer_norm.
  m.final_norm = m.pre_norm && !opt_switch(c, "_remove_final_layer_norm", false);
  m.bias = opt_switch(c, "enable_bias", true);
  m.affine = opt_switch(c, "layer_norm_elementwise_affine", true);
  m.project = m.embed_dim != m.hidden;

  m.prefix = ckpt.has("model.decoder.embed_tokens.weight") ? "model.decoder." : "decoder.";
  ckpt.expect(m.embed(), {m.vocab, m.embed_dim});
  ckpt.expect(m.prefix + "embed_positions.weight", {m.positions + kPositionOffset, m.hidden});
  if (m.project) {
    ckpt.expect(m.prefix + "project_in.weight", {m.hidden, m.embed_dim});
    ckpt.expect(m.prefix + "project_out.weight", {m.embed_dim, m.hidden});
  }
  auto norm = [&](const std::string& name) {
    if (!m.affine) return;
    ckpt.expect(name + ".weight", {m.hidden});
    ckpt.expect(name + ".bias", {m.hidden});
  };
  const int64_t h = m.hidden;
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = m.layer(i);
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      ckpt.expect(p + "self_attn." + proj + ".weight", {h, h});
      if (m.bias) ckpt.expect(p + "self_attn." + proj + ".bias", {h});
    }
    ckpt.expect(p + "fc1.weight", {m.ffn, h});
    ckpt.expect(p + "fc2.weight", {h, m.ffn});
    if (m.bias) {
      ckpt.expect(p + "fc1.bias", {m.ffn});
      ckpt.expect(p + "fc2.bias", {h});
    }
    norm(p + "self_attn_layer_norm");
    norm(p + "final_layer_norm");
  }
  if (m.final_norm) norm(m.prefix + "final_layer_norm");
  m.lm_head = choose_lm_head(ckpt, m.embed(), m.vocab, m.embed_dim);
  return m;
}

class OptAdapter final : public Adapter {
 public:
  AdapterInfo info() const override {
    return {"opt", "0.1.0", "OPT 125m-1.3b (learned positions through the cos/sin channel, ReLU, pre- or post-LN)",
            {"OPTForCausalLM"}, {"opt"}, {}};
  }

  Plan plan(const Checkpoint& ckpt, const ExportOptions& opt) const override {
    const OptConfig m = read_config(ckpt);
    const int64_t n = opt.cache_size;
    if (n > m.positions)
      throw Unsupported("--cache " + std::to_string(n) + " exceeds max_position_embeddings " + std::to_string(m.positions) +
                        ": OPT has learned positions only for 0.." + std::to_string(m.positions - 1) +
                        "; the largest cache that works is --cache " + std::to_string(m.positions));
    // dims.hidden is the width of the rows the runtime feeds (embeddings.bin).
    Plan p = decoder_plan({m.embed_dim, m.layers, m.vocab, m.heads, m.heads, m.head_dim, m.ffn}, m.embed(), opt);
    p.theta = fourier_theta(n);
    p.rewrites = {
        "embed_positions rows " + std::to_string(kPositionOffset) + ".." + std::to_string(n + kPositionOffset - 1) +
            " (positions 0.." + std::to_string(n - 1) + " plus OPT's offset 2) rebuilt from the cos/sin tables (" +
            std::to_string(n / 2 + 1) + " frequencies 2*pi*k/" + std::to_string(n) + ", theta length " +
            std::to_string(p.theta.size()) + ")",
        "q scaled by head_dim^-0.5 written as scores divided by sqrt(head_dim)",
        std::string(m.pre_norm ? "pre-LN layers (do_layer_norm_before true)"
                               : "post-LN layers (do_layer_norm_before false): LayerNorm after each residual Add") +
            (m.final_norm ? ", final_layer_norm" : ", no final_layer_norm"),
        "lm_head " + std::string(m.lm_head.tied ? "tied to embed_tokens, written as its own tensor" : "from lm_head.weight") +
            " after a last-position slice",
    };
    if (m.project)
      p.rewrites.push_back("project_in (" + std::to_string(m.embed_dim) + " -> " + std::to_string(m.hidden) +
                           ") and project_out as MatMuls; the runtime's embedding rows are word_embed_proj_dim " +
                           std::to_string(m.embed_dim) + " wide, so dims.hidden is " + std::to_string(m.embed_dim) +
                           " (the residual stream is " + std::to_string(m.hidden) + ")");
    if (!m.bias) p.rewrites.push_back("enable_bias false: no projection or fc biases");
    if (!m.affine) p.rewrites.push_back("layer_norm_elementwise_affine false: LayerNorms with constant scale 1, bias 0");
    p.notes.push_back("positions: HF derives them from the attention mask (cumsum - 1), the runtime from the token's "
                      "place in the context from 0; they agree for an unpadded prompt, which is what the runtime runs");
    return p;
  }

  void build_graph(const Checkpoint& ckpt, const Plan& plan, GraphBuilder& g) const override {
    const OptConfig m = read_config(ckpt);
    const int64_t n = plan.cache_size, t = static_cast<int64_t>(plan.theta.size());
    auto model = g.scope("model");
    const DecoderInputs io = decoder_inputs(g, plan);
    Value embeds = io.runtime.embeds;
    if (m.project) {
      auto s = g.scope("project_in");
      embeds = linear(g, ckpt, embeds, {m.prefix + "project_in.weight", std::nullopt});
    }
    const Value positions = learned_positions(g, ckpt, m.prefix + "embed_positions.weight", kPositionOffset, io.pe, n, t,
                                              m.hidden);
    const Value embedded = g.add(embeds, positions, "embed_positions/Add");
    const float score_divisor = static_cast<float>(std::sqrt(static_cast<double>(m.head_dim)));
    auto norm = [&](const std::string& scope, const std::string& module) {
      if (!m.affine) return NormSpec{scope, "", std::string(), kLayerNormEps};
      return NormSpec{scope, module + ".weight", module + ".bias", kLayerNormEps};
    };
    const Value hidden = decoder_layers(g, ckpt, embedded, m.layers, [&](int64_t i) {
      const std::string p = m.layer(i);
      auto maybe_bias = [&](const std::string& name) { return m.bias ? std::optional(p + name + ".bias") : std::nullopt; };
      const AttentionBlockSpec attn{.prefix = p + "self_attn.",
                                    .q_norm = "",
                                    .k_norm = "",
                                    .out_proj = "out_proj",
                                    .qkv_bias = m.bias,
                                    .out_bias = m.bias,
                                    .rope = false,
                                    .shape = {n, m.heads, m.heads, m.head_dim, score_divisor}};
      const ReluMlpSpec mlp{{p + "fc1.weight", maybe_bias("fc1")}, {p + "fc2.weight", maybe_bias("fc2")}, "fc1", "fc2"};
      DecoderLayer l{{norm("self_attn_layer_norm", p + "self_attn_layer_norm"), "self_attn",
                      attention_mixer(ckpt, io, attn), "attn_residual"},
                     {norm("final_layer_norm", p + "final_layer_norm"), "mlp", relu_ffn(ckpt, mlp), "mlp_residual"}};
      if (!m.pre_norm) {
        l.mixer.residual_norm = l.mixer.norm;
        l.ffn.residual_norm = l.ffn.norm;
      }
      return l;
    });
    TailSpec tail;
    if (m.final_norm) tail.final_norm = norm("final_layer_norm", m.prefix + "final_layer_norm");
    tail.lm_head = m.lm_head.tensor;
    if (m.project) tail.project_out = m.prefix + "project_out.weight";
    decoder_tail(g, ckpt, hidden, tail);
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(OptAdapter, "opt", "0.1.0")
