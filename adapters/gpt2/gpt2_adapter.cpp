// GPT-2 (gpt2, distilgpt2, gpt2-medium/large/xl): architectures.md section 2.
//
// What differs from Hugging Face, all exact except the default GELU:
// - c_attn (fused q|k|v, Conv1D [in, out]) becomes three projections;
// - wpe moves into the cos/sin channel: the runtime has one embedding table,
//   so positions are rebuilt in the graph as a Fourier series over 0..N-1
//   (sdk/learned_positions.hpp), the q tables carrying the lower half of the
//   frequencies and the k tables the upper half, so all four are consumed;
// - GELU is x*sigmoid(1.702x) unless `--gelu tanh` (gelu_new exactly);
// - the tied head is written as its own [H, V] tensor after a last-position slice.
#include <cmath>
#include <cstdio>
#include <string>

#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/forward_keys.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/learned_positions.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;

struct Gpt2Config {
  int64_t hidden, layers, heads, positions, vocab, inner;
  float eps;
  bool scale_by_inverse_layer;
  std::string prefix;  // "" (openai-community layout) or "transformer."
  LmHead lm_head;      // wte when tied
};

Gpt2Config read_config(const Checkpoint& ckpt) {
  const JsonFile& c = ckpt.config();
  refuse_unapplied_forward_keys(c, {"scale_attn_weights", "scale_attn_by_inverse_layer_idx"});
  Gpt2Config g{};
  g.hidden = c.get_int_any({"n_embd", "hidden_size"});
  g.layers = c.get_int_any({"n_layer", "num_hidden_layers"});
  g.heads = c.get_int_any({"n_head", "num_attention_heads"});
  g.positions = c.get_int_any({"n_positions", "max_position_embeddings"});
  g.vocab = c.get_int("vocab_size");
  // Bounded before any product of them is taken (4 * hidden below, sizes later).
  const std::pair<const char*, int64_t> sizes[] = {{"n_embd", g.hidden}, {"n_layer", g.layers}, {"n_head", g.heads},
                                                   {"n_positions", g.positions}, {"vocab_size", g.vocab}};
  for (const auto& [key, value] : sizes)
    if (value < 1 || value > (int64_t{1} << 24))
      throw BadInput(c.where(key) + ": " + std::to_string(value) + " is outside 1.." + std::to_string(int64_t{1} << 24));
  g.inner = c.find_int("n_inner").value_or(4 * g.hidden);
  if (g.inner < 1 || g.inner > (int64_t{1} << 26))
    throw BadInput(c.where("n_inner") + ": " + std::to_string(g.inner) + " is outside 1.." + std::to_string(int64_t{1} << 26));
  g.eps = static_cast<float>(checked_number_or(c, "layer_norm_epsilon", 1e-5, kNormEpsilon));
  if (g.hidden <= 0 || g.heads <= 0 || g.hidden % g.heads != 0)
    throw BadInput(c.where("n_embd") + ": " + std::to_string(g.hidden) + " is not divisible by n_head " +
                   std::to_string(g.heads));
  const std::string act = c.find_string("activation_function").value_or("gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    throw Unsupported(c.where("activation_function") + ": '" + act +
                      "' is not supported; the GPT-2 adapter implements gelu_new (tanh form) and its sigmoid approximation");
  if (c.find_bool("scale_attn_weights") == false)
    throw Unsupported(c.where("scale_attn_weights") + ": unscaled attention is not supported");
  g.scale_by_inverse_layer = c.find_bool("scale_attn_by_inverse_layer_idx").value_or(false);

  g.prefix = ckpt.has("transformer.wte.weight") ? "transformer." : "";
  const std::string wte = g.prefix + "wte.weight";
  ckpt.expect(wte, {g.vocab, g.hidden});
  ckpt.expect(g.prefix + "wpe.weight", {g.positions, g.hidden});
  // Every layer tensor against config.json before anything is built (n_inner
  // or n_embd disagreeing with the weights would otherwise size the graph).
  const int64_t h = g.hidden;
  for (int64_t i = 0; i < g.layers; ++i) {
    const std::string p = g.prefix + "h." + std::to_string(i) + ".";
    for (const char* norm : {"ln_1", "ln_2"}) {
      ckpt.expect(p + norm + ".weight", {h});
      ckpt.expect(p + norm + ".bias", {h});
    }
    ckpt.expect(p + "attn.c_attn.weight", {h, 3 * h});
    ckpt.expect(p + "attn.c_attn.bias", {3 * h});
    ckpt.expect(p + "attn.c_proj.weight", {h, h});
    ckpt.expect(p + "attn.c_proj.bias", {h});
    ckpt.expect(p + "mlp.c_fc.weight", {h, g.inner});
    ckpt.expect(p + "mlp.c_fc.bias", {g.inner});
    ckpt.expect(p + "mlp.c_proj.weight", {g.inner, h});
    ckpt.expect(p + "mlp.c_proj.bias", {h});
  }
  ckpt.expect(g.prefix + "ln_f.weight", {h});
  ckpt.expect(g.prefix + "ln_f.bias", {h});
  g.lm_head = choose_lm_head(ckpt, wte, g.vocab, g.hidden);
  return g;
}

class Gpt2Adapter final : public Adapter {
 public:
  AdapterInfo info() const override {
    AdapterInfo i;
    i.name = "gpt2";
    i.version = "0.1.0";
    i.description = "GPT-2 family (learned positions through the cos/sin channel, split c_attn)";
    i.architectures = {"GPT2LMHeadModel"};
    i.model_types = {"gpt2"};
    i.options = {{"gelu", {"sigmoid", "tanh"}, "sigmoid",
                  "GELU form: sigmoid = x*sigmoid(1.702x) (parsable approximation), tanh = gelu_new exactly"}};
    return i;
  }

  Plan plan(const Checkpoint& ckpt, const ExportOptions& opt) const override {
    const Gpt2Config c = read_config(ckpt);
    if (opt.cache_size > c.positions)
      throw Unsupported("--cache " + std::to_string(opt.cache_size) + " exceeds n_positions " +
                        std::to_string(c.positions) + ": GPT-2 has learned positions only for 0.." +
                        std::to_string(c.positions - 1) + "; the largest cache that works is --cache " +
                        std::to_string(c.positions));
    Plan p = decoder_plan({c.hidden, c.layers, c.vocab, c.heads, c.heads, c.hidden / c.heads, c.inner},
                          c.prefix + "wte.weight", opt);
    // theta_k = 2 pi k / N for k = 0..N/2, padded to an even length (the
    // runtime fills only an even number of columns).
    const int64_t n = opt.cache_size, k = n / 2 + 1;
    p.theta = fourier_theta(n);
    const std::string gelu = opt.option(info(), "gelu");
    p.options["gelu"] = gelu;
    p.rewrites = {
        "c_attn split into q_proj, k_proj, v_proj",
        "wpe rows 0.." + std::to_string(n - 1) + " rebuilt from the cos/sin tables (" + std::to_string(k) +
            " frequencies 2*pi*k/" + std::to_string(n) + ", theta length " + std::to_string(p.theta.size()) + ")",
        gelu == "tanh" ? "GELU as gelu_new (tanh form, exact)" : "GELU as x*sigmoid(1.702x) (approximation; --gelu tanh for exact)",
        "lm_head " + std::string(c.lm_head.tied ? "tied to wte, written as its own tensor" : "from lm_head.weight") +
            " after a last-position slice",
    };
    if (c.scale_by_inverse_layer) p.rewrites.push_back("attention scores divided by layer index + 1 (scale_attn_by_inverse_layer_idx)");
    return p;
  }

  void build_graph(const Checkpoint& ckpt, const Plan& plan, GraphBuilder& g) const override {
    const Gpt2Config c = read_config(ckpt);
    const int64_t n = plan.cache_size, t = static_cast<int64_t>(plan.theta.size());
    const GeluForm gelu_form = plan.options.value("gelu", "sigmoid") == "tanh" ? GeluForm::tanh : GeluForm::sigmoid;
    auto model = g.scope("model");
    const DecoderInputs io = decoder_inputs(g, plan);

    const Value wpe = learned_positions(g, ckpt, c.prefix + "wpe.weight", 0, io.pe, n, t, c.hidden);
    const Value embedded = g.add(io.runtime.embeds, wpe, "embed_positions/Add");
    const Value hidden = decoder_layers(g, ckpt, embedded, c.layers, [&](int64_t layer) {
      const std::string p = c.prefix + "h." + std::to_string(layer) + ".";
      auto norm = [&](const std::string& name) { return NormSpec{name, p + name + ".weight", p + name + ".bias", c.eps}; };
      auto conv1d = [&](const std::string& name) {
        return LinearSpec{p + name + ".weight", p + name + ".bias", WeightLayout::in_out};
      };
      return DecoderLayer{
          {norm("ln_1"), "attn", [&c, &ckpt, &io, p, n, layer](GraphBuilder& g, const Value& a) {
             return split_attention(g, ckpt, c, io, p, n, layer, a);
           }, "attn_residual"},
          {norm("ln_2"), "mlp", gelu_ffn(ckpt, {conv1d("mlp.c_fc"), conv1d("mlp.c_proj"), "c_fc", "c_proj", gelu_form}),
           "mlp_residual"}};
    });
    decoder_tail(g, ckpt, hidden, {"ln_f", c.prefix + "ln_f.weight", c.prefix + "ln_f.bias", c.eps}, c.lm_head.tensor);
  }

 private:
  // Fused c_attn (Conv1D [in, out], q|k|v) split into three projections, no
  // RoPE (positions are in the embedding), then c_proj.
  static Value split_attention(GraphBuilder& g, const Checkpoint& ckpt, const Gpt2Config& c, const DecoderInputs& io,
                               const std::string& p, int64_t n, int64_t layer, const Value& a) {
    const int64_t h = c.hidden, d = h / c.heads;
    ckpt.expect(p + "attn.c_attn.weight", {h, 3 * h});
    Value qkv[3];
    const char* names[3] = {"q_proj", "k_proj", "v_proj"};
    for (int i = 0; i < 3; ++i) {
      auto ps = g.scope(names[i]);
      qkv[i] = linear(g, ckpt, a, {p + "attn.c_attn.weight", p + "attn.c_attn.bias", WeightLayout::in_out, i * h, (i + 1) * h});
    }
    // q k^T / sqrt(HD), and / (layer + 1) folded into the same divisor.
    float score_divisor = static_cast<float>(std::sqrt(static_cast<double>(d)));
    if (c.scale_by_inverse_layer) score_divisor *= static_cast<float>(layer + 1);
    const Value ctx = attention(g, qkv[0], qkv[1], qkv[2], io.runtime.mask, {n, c.heads, c.heads, d, score_divisor});
    auto ps = g.scope("c_proj");
    return linear(g, ckpt, ctx, {p + "attn.c_proj.weight", p + "attn.c_proj.bias", WeightLayout::in_out});
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(Gpt2Adapter, "gpt2", "0.1.0")
