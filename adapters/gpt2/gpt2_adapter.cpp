// GPT-2 (gpt2, distilgpt2, gpt2-medium/large/xl): docs/architectures.md section 2.
//
// What differs from Hugging Face, all exact except the default GELU:
// - c_attn (fused q|k|v, Conv1D [in, out]) becomes three projections;
// - wpe moves into the cos/sin channel: the runtime has one embedding table,
//   so positions are rebuilt in the graph as a Fourier series over 0..N-1
//   (sdk/learned_positions.hpp), the q tables carrying the lower half of the
//   frequencies and the k tables the upper half, so all four are consumed;
// - GELU is x*sigmoid(1.702x) unless `--gelu tanh` (gelu_new exactly);
// - the tied head is written as its own [H, V] tensor after a last-position slice.
#include <string>

#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/decoder_model.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/learned_positions.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;

class Gpt2Adapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "gpt2";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    AdapterInfo i;
    i.name = kName;
    i.version = kVersion;
    i.description = "GPT-2 family (learned positions through the cos/sin channel, split c_attn)";
    i.architectures = {"GPT2LMHeadModel"};
    i.model_types = {"gpt2"};
    i.options = {gelu_new_option()};
    i.applied_keys = {"scale_attn_weights", "scale_attn_by_inverse_layer_idx"};
    return i;
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& options) const override {
    const JsonFile& c = ckpt.config();
    DecoderModel m;
    const int64_t hidden = c.get_int_any({"n_embd", "hidden_size"}),
                  layers = c.get_int_any({"n_layer", "num_hidden_layers"});
    const int64_t heads = c.get_int_any({"n_head", "num_attention_heads"});
    const int64_t positions = c.get_int_any({"n_positions", "max_position_embeddings"}),
                  vocab = c.get_int("vocab_size");
    // Bounded before any product of them is taken (4 * hidden below, sizes later).
    const std::pair<const char*, int64_t> sizes[] = {{"n_embd", hidden},
                                                     {"n_layer", layers},
                                                     {"n_head", heads},
                                                     {"n_positions", positions},
                                                     {"vocab_size", vocab}};
    for (const auto& [key, value] : sizes)
      if (value < 1 || value > (int64_t{1} << 24))
        throw BadInput(c.where(key) + ": " + std::to_string(value) + " is outside 1.." +
                       std::to_string(int64_t{1} << 24));
    const int64_t inner = c.find_int("n_inner").value_or(4 * hidden);
    if (inner < 1 || inner > (int64_t{1} << 26))
      throw BadInput(c.where("n_inner") + ": " + std::to_string(inner) + " is outside 1.." +
                     std::to_string(int64_t{1} << 26));
    const float eps = static_cast<float>(checked_number_or(c, "layer_norm_epsilon", 1e-5, kNormEpsilon));
    if (hidden % heads != 0)
      throw BadInput(c.where("n_embd") + ": " + std::to_string(hidden) + " is not divisible by n_head " +
                     std::to_string(heads));
    const std::string act = c.find_string("activation_function").value_or("gelu_new");
    if (act != "gelu_new" && act != "gelu_pytorch_tanh")
      throw Unsupported(
          c.where("activation_function") + ": '" + act +
          "' is not supported; the GPT-2 adapter implements gelu_new (tanh form) and its sigmoid approximation");
    if (c.find_bool("scale_attn_weights") == false)
      throw Unsupported(c.where("scale_attn_weights") + ": unscaled attention is not supported");
    const bool scale_by_inverse_layer = c.find_bool("scale_attn_by_inverse_layer_idx").value_or(false);
    m.dims = {hidden, layers, vocab, heads, heads, hidden / heads, inner};

    const std::string prefix = ckpt.has("transformer.wte.weight") ? "transformer." : "";
    m.embedding = m.tensors.add(prefix + "wte.weight", {vocab, hidden});
    const std::string wpe = m.tensors.add(prefix + "wpe.weight", {positions, hidden});
    const LmHead head = choose_lm_head(ckpt, m.embedding, vocab, hidden);
    m.tensors.add_optional("lm_head.weight", {vocab, hidden});

    m.largest_exact_cache = positions;
    m.largest_exact_cache_reason = c.where(c.has("n_positions") ? "n_positions" : "max_position_embeddings") +
                                   ": GPT-2 has learned positions only for 0.." + std::to_string(positions - 1);
    const std::string gelu_option = options.option(info(), "gelu");
    m.options["gelu"] = gelu_option;
    const GeluForm gelu = gelu_new_form(gelu_option);
    m.rewrites = {
        "c_attn split into q_proj, k_proj, v_proj",
        gelu_new_rewrite(gelu),
        "lm_head " + std::string(head.tied ? "tied to wte, written as its own tensor" : "from lm_head.weight") +
            " after a last-position slice",
    };
    // The positions of a cache of n: theta_k = 2 pi k / n for k = 0..n/2,
    // padded to an even length (the runtime fills only an even number of
    // columns), and wpe rows 0..n-1 rebuilt from the tables.
    m.for_cache = [wpe, hidden](DecoderModel& d, int64_t n) {
      d.theta = fourier_theta(n);
      const auto t = static_cast<int64_t>(d.theta.size());
      d.embed = [wpe, n, t, hidden](GraphBuilder& g, const DecoderContext& ctx, const Value& embeds) {
        const Value positions = learned_positions(g, ctx.ckpt, wpe, 0, ctx.io.pe, n, t, hidden);
        return g.add(embeds, positions, "embed_positions/Add");
      };
      // Listed second, after the c_attn split.
      d.rewrites.insert(d.rewrites.begin() + 1, "wpe rows 0.." + std::to_string(n - 1) +
                                                    " rebuilt from the cos/sin tables (" + std::to_string(n / 2 + 1) +
                                                    " frequencies 2*pi*k/" + std::to_string(n) + ", theta length " +
                                                    std::to_string(t) + ")");
    };
    if (scale_by_inverse_layer)
      m.rewrites.push_back("attention scores divided by layer index + 1 (scale_attn_by_inverse_layer_idx)");

    for (int64_t i = 0; i < layers; ++i) {
      const std::string p = prefix + "h." + std::to_string(i) + ".";
      auto norm = [&](const std::string& name) {
        return NormSpec{name, p + name + ".weight", p + name + ".bias", eps};
      };
      auto conv1d = [&](const std::string& name) {
        return LinearSpec{p + name + ".weight", p + name + ".bias", WeightLayout::in_out};
      };
      const LinearSpec c_attn = conv1d("attn.c_attn"), c_proj = conv1d("attn.c_proj");
      m.tensors.linear(c_attn, 3 * hidden, hidden);
      m.tensors.linear(c_proj, hidden, hidden);
      // The fused c_attn (Conv1D [in, out], q|k|v) split into three
      // projections, no RoPE (positions are in the embedding), then c_proj.
      CustomBody attention = [c_attn, c_proj, hidden, layer = i,
                              scale_by_inverse_layer](GraphBuilder& g, const DecoderContext& ctx, const Value& x) {
        Value qkv[3];
        const char* names[3] = {"q_proj", "k_proj", "v_proj"};
        for (int part = 0; part < 3; ++part) {
          auto s = g.scope(names[part]);
          LinearSpec slice = c_attn;
          slice.out_begin = part * hidden;
          slice.out_end = (part + 1) * hidden;
          qkv[part] = linear(g, ctx.ckpt, x, slice);
        }
        // q k^T / sqrt(HD), and / (layer + 1) folded into the same divisor.
        AttentionShape shape = ctx.attention;
        if (scale_by_inverse_layer) shape.score_divisor *= static_cast<float>(layer + 1);
        const Value mixed = llm2hef::sdk::attention(g, qkv[0], qkv[1], qkv[2], ctx.io.runtime.mask, shape);
        auto s = g.scope("c_proj");
        return linear(g, ctx.ckpt, mixed, c_proj);
      };
      const GeluMlpSpec mlp{conv1d("mlp.c_fc"), conv1d("mlp.c_proj"), "c_fc", "c_proj", gelu};
      m.layers.push_back(
          {{norm("ln_1"), "attn", attention, "attn_residual"}, {norm("ln_2"), "mlp", mlp, "mlp_residual"}});
    }
    m.tail = TailSpec{NormSpec{"ln_f", prefix + "ln_f.weight", prefix + "ln_f.bias", eps}, head.tensor};
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(Gpt2Adapter)
