// LFM2 / LFM2.5 (Lfm2ForCausalLM): docs/architectures.md section 7.
//
// Attention layers are Llama-style with per-head q/k layernorm (QK-Norm
// through constant segment matrices, a plain RMSNorm for one head) and an
// `out_proj`. Conv layers
// (Lfm2ShortConv) are rebuilt by sdk/short_conv.hpp: every time interaction
// is a matmul of a 0/1 shift matrix, derived from the runtime's mask, with
// B*x as the cached second operand, so the runtime's KV cache carries the
// conv state and nothing but the six runtime inputs feeds the graph.
// `embedding_norm` is the FINAL norm (applied after the last layer).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/decoder_model.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/head_norm.hpp"
#include "llm2hef/sdk/rope.hpp"
#include "llm2hef/sdk/short_conv.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;

const std::string kEmbed = kHfEmbedTokens;
const std::string kFinalNorm = "model.embedding_norm.weight";

// HF's feed-forward width (configuration_lfm2.py; docs/architectures.md 7.2):
// block_ff_dim wins over intermediate_size; with auto-adjust, 2/3 of it, then
// (only when a multiplier is set) scaled and rounded up to block_multiple_of.
// Layer `layer`'s feed-forward weight `name` (w1 gate, w3 up, w2 down).
std::string ffn_weight(int64_t layer, const char* name) {
  return hf_layer_prefix(layer) + "feed_forward." + name + ".weight";
}

int64_t configured_ffn(const JsonFile& c) {
  int64_t ff = c.find_int("block_ff_dim").value_or(0);
  if (ff == 0) ff = c.get_int("intermediate_size");
  if (!c.find_bool("block_auto_adjust_ff_dim").value_or(true)) return ff;
  ff = static_cast<int64_t>(2.0 * static_cast<double>(ff) / 3.0);
  const auto& raw = c.raw();
  const bool has_mult = !raw.contains("block_ffn_dim_multiplier") || !raw["block_ffn_dim_multiplier"].is_null();
  if (!has_mult) return ff;
  const double mult = c.find_number("block_ffn_dim_multiplier").value_or(1.0);
  const int64_t multiple = c.find_int("block_multiple_of").value_or(256);
  if (multiple <= 0) throw BadInput(c.where("block_multiple_of") + ": must be positive");
  ff = static_cast<int64_t>(mult * static_cast<double>(ff));
  return multiple * ((ff + multiple - 1) / multiple);
}

// layer_types, else full_attn_idxs, else every layer attention (HF's rule).
std::vector<bool> layer_kinds(const JsonFile& c, int64_t layers) {
  std::vector<bool> attn(static_cast<size_t>(layers), true);
  const auto& raw = c.raw();
  if (raw.contains("layer_types") && !raw["layer_types"].is_null()) {
    const auto& t = raw["layer_types"];
    if (!t.is_array() || static_cast<int64_t>(t.size()) != layers)
      throw BadInput(c.where("layer_types") + ": expected a list of " + std::to_string(layers) + " layer types");
    for (size_t i = 0; i < t.size(); ++i) {
      const std::string kind = t[i].is_string() ? t[i].get<std::string>() : "";
      if (kind != "full_attention" && kind != "conv")
        throw BadInput(c.where("layer_types") + ": entry " + std::to_string(i) + " is '" + t[i].dump() +
                       "', expected \"full_attention\" or \"conv\"");
      attn[i] = kind == "full_attention";
    }
    return attn;
  }
  if (auto idx = c.find_int_list("full_attn_idxs")) {
    attn.assign(static_cast<size_t>(layers), false);
    for (int64_t i : *idx) {
      if (i < 0 || i >= layers)
        throw BadInput(c.where("full_attn_idxs") + ": index " + std::to_string(i) + " is outside 0.." +
                       std::to_string(layers - 1));
      attn[static_cast<size_t>(i)] = true;
    }
  }
  return attn;
}

// RoPE frequencies. LFM2's config class takes the base from `theta` when that
// key is present (it wins over rope_theta, as for the original config keys),
// else rope_theta or rope_parameters.rope_theta, and defaults to 1e6, not 10000.
std::vector<float> lfm2_inv_freq(const JsonFile& c, int64_t head_dim, std::vector<std::string>& rewrites) {
  const auto& raw = c.raw();
  const bool in_params = raw.contains("rope_parameters") && raw["rope_parameters"].is_object() &&
                         raw["rope_parameters"].contains("rope_theta");
  if (!c.has("theta") && (c.has("rope_theta") || in_params)) return rope_inv_freq(c, head_dim, rewrites);
  nlohmann::json doc = raw;
  doc["rope_theta"] = c.has("theta") ? c.get_number("theta") : 1e6;
  // rope_inv_freq prefers the rope dict's base; `theta` wins over it here.
  if (in_params) doc["rope_parameters"].erase("rope_theta");
  return rope_inv_freq(JsonFile(c.origin(), doc), head_dim, rewrites);
}

std::string mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

std::string layer_list(const std::vector<bool>& attention_layers, bool attention) {
  std::string s;
  for (size_t i = 0; i < attention_layers.size(); ++i)
    if (attention_layers[i] == attention) s += (s.empty() ? "" : ",") + std::to_string(i);
  return "[" + s + "]";
}

class Lfm2Adapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "lfm2";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    return {kName,
            kVersion,
            "LiquidAI LFM2 / LFM2.5 (short-conv layers through the KV cache, QK-Norm attention)",
            {"Lfm2ForCausalLM"},
            {"lfm2"},
            {},
            {"conv_bias", "conv_L_cache", "layer_types"}};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    const JsonFile& c = ckpt.config();
    DecoderModel m;
    const DecoderDims d = read_decoder_dims(c);
    m.max_positions = d.max_positions;
    const float eps = static_cast<float>(checked_number_or(c, "norm_eps", 1e-5, kNormEpsilon));
    const int64_t kernel = c.find_size("conv_L_cache", 3, 64);
    const bool conv_bias = c.find_bool("conv_bias").value_or(false);
    const std::vector<bool> attention = layer_kinds(c, d.layers);
    const auto attention_layers = static_cast<int64_t>(std::count(attention.begin(), attention.end(), true));
    const int64_t conv_layers = d.layers - attention_layers;
    if (attention_layers == 0)
      throw Unsupported(c.where("layer_types") +
                        ": no attention layer; the runtime's position tables would feed nothing (not supported)");
    // Only the attention layers use positions; the conv layers take theirs
    // from the mask, so theta is RoPE's alone and the pe widths stay head_dim.
    m.theta = rope_theta_resource(lfm2_inv_freq(c, d.head_dim, m.rewrites));

    m.embedding = m.tensors.add(kEmbed, {d.vocab, d.hidden});
    // The real width is the w1 rows; the config formula must agree (a repackaged
    // config with a pre-adjusted intermediate_size would otherwise go unnoticed).
    const std::string w1 = ffn_weight(0, "w1");
    const TensorInfo& w1i = ckpt.info(w1);
    if (w1i.shape.size() != 2 || w1i.shape[1] != d.hidden)
      throw BadInput(w1i.file.string() + ": tensor '" + w1 + "' has shape " + shape_string(w1i.shape) +
                     ", expected [FFN, " + std::to_string(d.hidden) + "]");
    const int64_t ffn = w1i.shape[0];
    const int64_t want = configured_ffn(c);
    if (want != ffn)
      throw BadInput(c.where("block_ff_dim") + ": the config gives a feed-forward width of " + std::to_string(want) +
                     " (HF's auto-adjust arithmetic), but " + w1i.file.string() + " has '" + w1 + "' with " +
                     std::to_string(ffn) + " rows");
    m.dims = {d.hidden, d.layers, d.vocab, d.heads, d.kv_heads, d.head_dim, ffn};
    // HF reads the original key `tie_embedding` first.
    m.tensors.add_optional("lm_head.weight", {d.vocab, d.hidden});
    const LmHead head = choose_lm_head(ckpt, kEmbed, d.vocab, d.hidden, {"tie_embedding", "tie_word_embeddings"});

    for (int64_t i = 0; i < d.layers; ++i) {
      const std::string p = hf_layer_prefix(i);
      auto norm = [&](const std::string& name) { return NormSpec{name, p + name + ".weight", std::nullopt, eps}; };
      BranchDescription mixer{norm("operator_norm"), "self_attn", CustomBody{}, "operator_residual"};
      if (attention[static_cast<size_t>(i)]) {
        mixer.body = AttentionMixer{{.prefix = p + "self_attn.",
                                     .q_norm = "q_layernorm",
                                     .k_norm = "k_layernorm",
                                     .out_proj = "out_proj",
                                     .norm_eps = eps}};
      } else {
        const std::string conv = p + "conv.";
        auto bias = [&](const std::string& t) { return conv_bias ? std::optional(conv + t) : std::nullopt; };
        mixer.scope = "conv";
        mixer.body = ShortConvSpec{conv + "in_proj.weight",
                                   conv + "conv.weight",
                                   conv + "out_proj.weight",
                                   bias("in_proj.bias"),
                                   bias("conv.bias"),
                                   bias("out_proj.bias"),
                                   d.hidden,
                                   kernel};
      }
      const SwigluSpec ffn_spec{ffn_weight(i, "w1"), ffn_weight(i, "w3"), ffn_weight(i, "w2"), "w1", "w3", "w2"};
      m.layers.push_back({mixer, {norm("ffn_norm"), "feed_forward", ffn_spec, "ffn_residual"}});
    }
    // `embedding_norm` is the final norm, despite its name.
    m.tail = TailSpec{NormSpec{"embedding_norm", kFinalNorm, std::nullopt, eps}, head.tensor};

    m.rewrites.push_back("attention layers " + layer_list(attention, true) + ": QK-Norm (q/k_layernorm) " +
                         head_rms_norm_form(d.heads, d.kv_heads) + ", RoPE, GQA " + std::to_string(d.heads) + "/" +
                         std::to_string(d.kv_heads) + " through a constant repeat-interleave MatMul");
    m.rewrites.push_back("conv layers " + layer_list(attention, false) + ": causal depthwise conv (kernel " +
                         std::to_string(kernel) + (conv_bias ? ", with biases" : "") +
                         ") as shift matrices from the mask times B*x, B*x the cached operand (exact)");
    m.rewrites.push_back(
        "embedding_norm applied as the final norm; " +
        std::string(head.tied ? "tied lm_head written as its own tensor" : "lm_head from lm_head.weight") +
        " after a last-position slice");
    m.for_cache = [attention_layers, conv_layers, kernel](DecoderModel& d, int64_t n) {
      describe_conv_cost(d, n, attention_layers, conv_layers, kernel);
    };
    return m;
  }

 private:
  // Cost of the conv formulation, also shown by inspect (memory) and the docs.
  static void describe_conv_cost(DecoderModel& m, int64_t n, int64_t attn, int64_t conv, int64_t kernel) {
    const ModelDims& d = m.dims;
    const ShortConvCost c = short_conv_cost(n, d.hidden, kernel);
    const int64_t kv_per_pos = attn * 2 * d.heads * d.head_dim;  // after the GQA expansion, as inspect counts
    const int64_t conv_per_pos = conv * d.hidden;
    m.cache_cost.values_per_position = kv_per_pos + conv_per_pos;
    m.cache_cost.layout = std::to_string(attn) + " attention layers x 2 x " + std::to_string(d.heads) + " x " +
                          std::to_string(d.head_dim) + " (K, V) + " + std::to_string(conv) + " conv layers x " +
                          std::to_string(d.hidden) + " (B*x)";
    m.cache_cost.figures = {{"conv_layers", conv},
                            {"conv_kernel", kernel},
                            {"conv_shift_constant_values", c.shift_constant_values},
                            {"conv_mask_macs_per_row", c.mask_macs_per_row},
                            {"conv_shift_matmuls_per_layer", c.per_layer_matmuls},
                            {"conv_shift_macs_per_layer_per_row", c.per_layer_macs_per_row},
                            {"conv_cached_values_per_layer", c.per_layer_cached_values}};
    // The conv layer's own projections, for scale: in_proj 3H x H + out_proj H x H.
    const double own = 4.0 * static_cast<double>(d.hidden * d.hidden);
    char buf[640];
    std::snprintf(buf, sizeof buf,
                  "conv cost at cache %lld: no extra inputs (pe width %zu and mask [%lld, %lld] as for any model); "
                  "one [%lld, %lld] 0/1 shift constant applied %lld times to the mask (%.1f M MAC per row, once per "
                  "graph); per conv layer %lld matmul(s) [rows, %lld] x [%lld, %lld] (%.1f M MAC per row, %.0f%% of "
                  "the layer's own projections) and a B*x cache of %lld x %lld (%s at 1 byte per value; %lld conv "
                  "layers: %s)",
                  static_cast<long long>(n), m.theta.size(), static_cast<long long>(n),
                  static_cast<long long>(d.heads * n), static_cast<long long>(n), static_cast<long long>(n),
                  static_cast<long long>(kernel), static_cast<double>(c.mask_macs_per_row) / 1e6,
                  static_cast<long long>(c.per_layer_matmuls), static_cast<long long>(n), static_cast<long long>(n),
                  static_cast<long long>(d.hidden), static_cast<double>(c.per_layer_macs_per_row) / 1e6,
                  100.0 * static_cast<double>(c.per_layer_macs_per_row) / own, static_cast<long long>(n),
                  static_cast<long long>(d.hidden), mib(static_cast<double>(c.per_layer_cached_values)).c_str(),
                  static_cast<long long>(conv), mib(static_cast<double>(c.per_layer_cached_values * conv)).c_str());
    m.notes.push_back(buf);
    if (kernel > 2)
      m.notes.push_back("unproven on the DFC: whether it keeps one B*x cache per conv layer or one per shift matmul (" +
                        std::to_string(c.per_layer_matmuls) + "); the second would multiply the conv cache by " +
                        std::to_string(c.per_layer_matmuls));
    m.notes.push_back(
        "the conv shifts rely on the runtime's mask rows allowing one contiguous run of key columns that "
        "ends at the query's own column (hailo-contract.md section 9); only the chip can confirm it in the "
        "token-by-token scope");
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(Lfm2Adapter)
