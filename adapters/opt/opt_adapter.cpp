// OPT (OPTForCausalLM, facebook/opt-125m .. 1.3b): docs/opt.md; modeling_opt.py
// is the reference (docs/architectures.md has no section on it, see its section 12).
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
#include <string>

#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/decoder_model.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/learned_positions.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;

constexpr int64_t kPositionOffset = 2;  // OPTLearnedPositionalEmbedding.offset
constexpr float kLayerNormEps = 1e-5f;  // nn.LayerNorm's default; OPT has no eps key

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

class OptAdapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "opt";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    return {kName,
            kVersion,
            "OPT 125m-1.3b (learned positions through the cos/sin channel, ReLU, pre- or post-LN)",
            {"OPTForCausalLM"},
            {"opt"},
            {},
            {"do_layer_norm_before", "_remove_final_layer_norm", "enable_bias", "layer_norm_elementwise_affine",
             "word_embed_proj_dim"}};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    const JsonFile& c = ckpt.config();
    DecoderModel m;
    const int64_t hidden = c.get_size("hidden_size"), layers = c.get_size("num_hidden_layers");
    const int64_t heads = c.get_size("num_attention_heads"), ffn = c.get_size("ffn_dim"),
                  vocab = c.get_size("vocab_size");
    const int64_t positions = c.find_size("max_position_embeddings", 2048);
    const int64_t embed_dim = c.find_size("word_embed_proj_dim", hidden);
    if (hidden % heads != 0)
      throw BadInput(c.where("hidden_size") + ": " + std::to_string(hidden) +
                     " is not divisible by num_attention_heads " + std::to_string(heads));
    read_activation(c, "activation_function", {"relu"}, "OPT's relu only");
    const bool pre_norm = opt_switch(c, "do_layer_norm_before", true);
    // modeling_opt.py: the decoder's final_layer_norm exists only with pre-LN
    // layers and without the backward-compatibility flag _remove_final_layer_norm.
    const bool final_norm = pre_norm && !opt_switch(c, "_remove_final_layer_norm", false);
    const bool bias = opt_switch(c, "enable_bias", true);
    const bool affine = opt_switch(c, "layer_norm_elementwise_affine", true);
    const bool project = embed_dim != hidden;
    // dims.hidden is the width of the rows the runtime feeds (embeddings.bin).
    m.dims = {embed_dim, layers, vocab, heads, heads, hidden / heads, ffn};
    m.residual_width = hidden;

    const std::string prefix = ckpt.has("model.decoder.embed_tokens.weight") ? "model.decoder." : "decoder.";
    m.embedding = m.tensors.add(prefix + "embed_tokens.weight", {vocab, embed_dim});
    const std::string table = m.tensors.add(prefix + "embed_positions.weight", {positions + kPositionOffset, hidden});
    std::string project_in, project_out;
    if (project) {
      project_in = m.tensors.add(prefix + "project_in.weight", {hidden, embed_dim});
      project_out = m.tensors.add(prefix + "project_out.weight", {embed_dim, hidden});
    }
    m.tensors.add_optional("lm_head.weight", {vocab, embed_dim});
    const LmHead head = choose_lm_head(ckpt, m.embedding, vocab, embed_dim);

    m.largest_exact_cache = positions;
    m.largest_exact_cache_reason =
        c.where("max_position_embeddings") + ": OPT has learned positions only for 0.." + std::to_string(positions - 1);
    // The positions of a cache of n, rows offset by 2, rebuilt from the
    // cos/sin tables of theta 2 pi k / n (sdk/learned_positions.hpp); the
    // runtime's rows are word_embed_proj_dim wide, project_in first.
    m.for_cache = [project_in, table, hidden](DecoderModel& d, int64_t n) {
      d.theta = fourier_theta(n);
      const auto t = static_cast<int64_t>(d.theta.size());
      d.embed = [project_in, table, n, t, hidden](GraphBuilder& g, const DecoderContext& ctx,
                                                  const Value& runtime_embeds) {
        Value embeds = runtime_embeds;
        if (!project_in.empty()) {
          auto s = g.scope("project_in");
          embeds = linear(g, ctx.ckpt, embeds, {project_in, std::nullopt});
        }
        const Value positions = learned_positions(g, ctx.ckpt, table, kPositionOffset, ctx.io.pe, n, t, hidden);
        return g.add(embeds, positions, "embed_positions/Add");
      };
      // Listed first.
      d.rewrites.insert(d.rewrites.begin(), "embed_positions rows " + std::to_string(kPositionOffset) + ".." +
                                                std::to_string(n + kPositionOffset - 1) + " (positions 0.." +
                                                std::to_string(n - 1) +
                                                " plus OPT's offset 2) rebuilt from the "
                                                "cos/sin tables (" +
                                                std::to_string(n / 2 + 1) + " frequencies 2*pi*k/" + std::to_string(n) +
                                                ", theta length " + std::to_string(t) + ")");
    };
    m.rewrites = {
        "q scaled by head_dim^-0.5 written as scores divided by sqrt(head_dim)",
        std::string(pre_norm ? "pre-LN layers (do_layer_norm_before true)"
                             : "post-LN layers (do_layer_norm_before false): LayerNorm after each residual Add") +
            (final_norm ? ", final_layer_norm" : ", no final_layer_norm"),
        "lm_head " +
            std::string(head.tied ? "tied to embed_tokens, written as its own tensor" : "from lm_head.weight") +
            " after a last-position slice",
    };
    if (project)
      m.rewrites.push_back("project_in (" + std::to_string(embed_dim) + " -> " + std::to_string(hidden) +
                           ") and project_out as MatMuls; the runtime's embedding rows are word_embed_proj_dim " +
                           std::to_string(embed_dim) + " wide, so dims.hidden is " + std::to_string(embed_dim) +
                           " (the residual stream is " + std::to_string(hidden) + ")");
    if (!bias) m.rewrites.push_back("enable_bias false: no projection or fc biases");
    if (!affine) m.rewrites.push_back("layer_norm_elementwise_affine false: LayerNorms with constant scale 1, bias 0");
    m.notes.push_back(
        "positions: HF derives them from the attention mask (cumsum - 1), the runtime from the token's "
        "place in the context from 0; they agree for an unpadded prompt, which is what the runtime runs");

    auto norm = [&](const std::string& scope, const std::string& module) {
      if (!affine) return NormSpec{scope, "", std::string(), kLayerNormEps};
      return NormSpec{scope, module + ".weight", module + ".bias", kLayerNormEps};
    };
    for (int64_t i = 0; i < layers; ++i) {
      const std::string p = prefix + "layers." + std::to_string(i) + ".";
      auto maybe_bias = [&](const std::string& name) {
        return bias ? std::optional(p + name + ".bias") : std::nullopt;
      };
      const AttentionBlockSpec attn{.prefix = p + "self_attn.",
                                    .out_proj = "out_proj",
                                    .qkv_bias = bias,
                                    .out_bias = bias,
                                    .rope = false};
      const ReluMlpSpec mlp{{p + "fc1.weight", maybe_bias("fc1")}, {p + "fc2.weight", maybe_bias("fc2")}, "fc1", "fc2"};
      LayerDescription l{{norm("self_attn_layer_norm", p + "self_attn_layer_norm"), "self_attn", AttentionMixer{attn},
                          "attn_residual"},
                         {norm("final_layer_norm", p + "final_layer_norm"), "mlp", mlp, "mlp_residual"}};
      if (!pre_norm) {
        l.mixer.residual_norm = l.mixer.norm;
        l.ffn.residual_norm = l.ffn.norm;
      }
      m.layers.push_back(std::move(l));
    }
    if (final_norm) m.tail.final_norm = norm("final_layer_norm", prefix + "final_layer_norm");
    m.tail.lm_head = head.tensor;
    m.tail.project_out = project_out;
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(OptAdapter)
