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

#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/learned_positions.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;

struct Gpt2Config {
  int64_t hidden, layers, heads, positions, vocab, inner;
  float eps;
  bool scale_by_inverse_layer;
  std::string prefix;   // "" (openai-community layout) or "transformer."
  std::string lm_head;  // tensor used as the head (wte when tied)
};

Gpt2Config read_config(const Checkpoint& ckpt) {
  const JsonFile& c = ckpt.config();
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
  g.eps = static_cast<float>(c.find_number("layer_norm_epsilon").value_or(1e-5));
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
  const bool tied = c.find_bool("tie_word_embeddings").value_or(true);
  if (ckpt.has("lm_head.weight")) {
    ckpt.expect("lm_head.weight", {g.vocab, g.hidden});
    g.lm_head = "lm_head.weight";
  } else if (tied) {
    g.lm_head = wte;
  } else {
    throw BadInput(c.where("tie_word_embeddings") + ": false, but the checkpoint has no lm_head.weight");
  }
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
                        std::to_string(c.positions - 1));
    Plan p;
    p.dims = {c.hidden, c.layers, c.vocab, c.heads, c.heads, c.hidden / c.heads, c.inner};
    // theta_k = 2 pi k / N for k = 0..N/2, padded to an even length (the
    // runtime fills only an even number of columns).
    const int64_t n = opt.cache_size, k = n / 2 + 1;
    p.theta.assign(static_cast<size_t>(k + k % 2), 0.0f);
    for (int64_t i = 0; i < k; ++i)
      p.theta[static_cast<size_t>(i)] = static_cast<float>(2.0 * M_PI * static_cast<double>(i) / static_cast<double>(n));
    p.pe_q_tiles = c.heads;
    p.pe_k_tiles = c.heads;
    p.embedding_tensor = c.prefix + "wte.weight";
    p.lm_head_shards = choose_lm_head_shards(c.vocab, opt.lm_head_shards, p.lm_head_shard_reason);
    const std::string gelu = opt.option(info(), "gelu");
    p.options["gelu"] = gelu;
    p.rewrites = {
        "c_attn split into q_proj, k_proj, v_proj",
        "wpe rows 0.." + std::to_string(n - 1) + " rebuilt from the cos/sin tables (" + std::to_string(k) +
            " frequencies 2*pi*k/" + std::to_string(n) + ", theta length " + std::to_string(p.theta.size()) + ")",
        gelu == "tanh" ? "GELU as gelu_new (tanh form, exact)" : "GELU as x*sigmoid(1.702x) (approximation; --gelu tanh for exact)",
        "lm_head " + std::string(c.lm_head == "lm_head.weight" ? "from lm_head.weight" : "tied to wte, written as its own tensor") +
            " after a last-position slice",
    };
    if (c.scale_by_inverse_layer) p.rewrites.push_back("attention scores divided by layer index + 1 (scale_attn_by_inverse_layer_idx)");
    return p;
  }

  void build_graph(const Checkpoint& ckpt, const Plan& plan, GraphBuilder& g) const override {
    const Gpt2Config c = read_config(ckpt);
    const int64_t n = plan.cache_size, h = c.hidden, t = static_cast<int64_t>(plan.theta.size());
    const GeluForm gelu_form = plan.options.value("gelu", "sigmoid") == "tanh" ? GeluForm::tanh : GeluForm::sigmoid;
    auto model = g.scope("model");
    RuntimeInputs in = declare_runtime_inputs(g, plan);
    PeTables pe = tile_pe_tables(g, in, plan);

    Value hidden = g.add(in.embeds, positions(g, ckpt, c, pe, n, t), "embed_positions/Add");
    for (int64_t layer = 0; layer < c.layers; ++layer) {
      auto ls = g.scope("layers." + std::to_string(layer));
      const std::string p = c.prefix + "h." + std::to_string(layer) + ".";
      Value a;
      {
        auto s = g.scope("ln_1");
        a = layer_norm(g, ckpt, hidden, p + "ln_1.weight", p + "ln_1.bias", c.eps);
      }
      ckpt.expect(p + "attn.c_attn.weight", {h, 3 * h});
      Value attn_out;
      {
        auto s = g.scope("attn");
        Value qkv[3];
        const char* names[3] = {"q_proj", "k_proj", "v_proj"};
        for (int i = 0; i < 3; ++i) {
          auto ps = g.scope(names[i]);
          qkv[i] = linear(g, ckpt, a, {p + "attn.c_attn.weight", p + "attn.c_attn.bias", WeightLayout::in_out, i * h, (i + 1) * h});
        }
        const int64_t d = h / c.heads;
        // q k^T / sqrt(HD), and / (layer + 1) folded into the same divisor.
        float score_divisor = static_cast<float>(std::sqrt(static_cast<double>(d)));
        if (c.scale_by_inverse_layer) score_divisor *= static_cast<float>(layer + 1);
        Value ctx = attention(g, qkv[0], qkv[1], qkv[2], in.mask, {n, c.heads, c.heads, d, score_divisor});
        auto ps = g.scope("c_proj");
        attn_out = linear(g, ckpt, ctx, {p + "attn.c_proj.weight", p + "attn.c_proj.bias", WeightLayout::in_out});
      }
      hidden = g.add(hidden, attn_out, "attn_residual/Add");
      Value m;
      {
        auto s = g.scope("ln_2");
        m = layer_norm(g, ckpt, hidden, p + "ln_2.weight", p + "ln_2.bias", c.eps);
      }
      Value mlp_out;
      {
        auto s = g.scope("mlp");
        Value up;
        {
          auto ps = g.scope("c_fc");
          up = linear(g, ckpt, m, {p + "mlp.c_fc.weight", p + "mlp.c_fc.bias", WeightLayout::in_out});
        }
        Value act = gelu(g, up, gelu_form);
        auto ps = g.scope("c_proj");
        mlp_out = linear(g, ckpt, act, {p + "mlp.c_proj.weight", p + "mlp.c_proj.bias", WeightLayout::in_out});
      }
      hidden = g.add(hidden, mlp_out, "mlp_residual/Add");
    }
    Value final_norm;
    {
      auto s = g.scope("ln_f");
      final_norm = layer_norm(g, ckpt, hidden, c.prefix + "ln_f.weight", c.prefix + "ln_f.bias", c.eps);
    }
    Value last = last_position(g, final_norm);
    auto s = g.scope("lm_head");
    Value head = g.weight("weight", ckpt, c.lm_head, {.transpose = true});
    g.output(g.matmul(last, head), "logits");
  }

 private:
  // wpe[p] = sum_k A_k cos(theta_k p) + B_k sin(theta_k p). The q tables carry
  // columns [0, T/2) and the k tables [T/2, T), each through the first head
  // block of its tiled table.
  static Value positions(GraphBuilder& g, const Checkpoint& ckpt, const Gpt2Config& c, const PeTables& pe, int64_t n,
                         int64_t t) {
    auto s = g.scope("positions");
    std::vector<float> wpe(static_cast<size_t>(n * c.hidden));
    ckpt.read_rows(c.prefix + "wpe.weight", 0, n, wpe);
    const FourierPositions fit = fit_learned_positions(wpe, n, c.hidden);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3e", fit.max_abs_error);
    g.annotate("llm2hef.positions.max_abs_error", buf);
    std::snprintf(buf, sizeof buf, "%.3e", fit.dft_max_abs_error);
    g.annotate("llm2hef.positions.dft_max_abs_error", buf);
    const int64_t half = t / 2, h = c.hidden;
    auto part = [&](const Value& table, const std::vector<float>& coef, int64_t begin, const std::string& name) {
      Value cols = g.slice(table, 2, begin, begin + half, name + "/Slice");
      std::span<const float> rows(coef.data() + begin * h, static_cast<size_t>(half * h));
      return g.matmul(cols, g.constant(name + "_coef", {half, h}, rows), name + "/MatMul");
    };
    Value sum = g.add(part(pe.q_cos, fit.cos_coef, 0, "q_cos"), part(pe.k_cos, fit.cos_coef, half, "k_cos"), "cos/Add");
    sum = g.add(sum, part(pe.q_sin, fit.sin_coef, 0, "q_sin"), "sin_lo/Add");
    return g.add(sum, part(pe.k_sin, fit.sin_coef, half, "k_sin"), "sin_hi/Add");
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(Gpt2Adapter, "gpt2", "0.1.0")
