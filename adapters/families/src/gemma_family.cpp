#include "llm2hef/families/gemma_family.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/head_norm.hpp"
#include "llm2hef/sdk/rope.hpp"
#include "llm2hef/sdk/rope_bases.hpp"

namespace llm2hef::families {

namespace {

// A softcap: the class default when the key is absent (Gemma 2 caps by
// default), none when null; a value is a scale factor (tanh(x / cap) * cap).
float softcap(const JsonFile& c, const std::string& key, double absent) {
  if (!c.raw().contains(key)) return static_cast<float>(absent);
  return static_cast<float>(find_checked_number(c, key, kScaleFactor).value_or(0.0));
}

// Per layer: true = sliding_attention. layer_types when given; else the
// default of transformers 5.24: Gemma 2 alternates (layer i slides when i+1
// is odd), Gemma 3 slides except every sliding_window_pattern-th layer.
std::vector<bool> sliding_layers(const JsonFile& c, int64_t layers, GemmaGeneration gen) {
  std::vector<bool> out(static_cast<size_t>(layers));
  if (c.has("layer_types") && !c.raw()["layer_types"].is_null()) {
    const auto& lt = c.raw()["layer_types"];
    if (!lt.is_array() || static_cast<int64_t>(lt.size()) != layers)
      throw BadInput(c.where("layer_types") + ": expected a list of " + std::to_string(layers) + " layer types");
    for (size_t i = 0; i < lt.size(); ++i) {
      const std::string t = lt[i].is_string() ? lt[i].get<std::string>() : lt[i].dump();
      if (t != "sliding_attention" && t != "full_attention")
        throw Unsupported(c.where("layer_types") + ": layer " + std::to_string(i) + " is '" + t +
                          "' (only sliding_attention and full_attention are supported)");
      out[i] = t == "sliding_attention";
    }
    return out;
  }
  const int64_t pattern = gen == GemmaGeneration::gemma2 ? 2 : c.find_size("sliding_window_pattern", 6);
  for (int64_t i = 0; i < layers; ++i) out[static_cast<size_t>(i)] = (i + 1) % pattern != 0;
  return out;
}

// The inv_freq of one Gemma 3 layer type, read by rope_inv_freq from a
// config of its own: rope_parameters[type] (transformers 5), or, in the
// older spelling, rope_theta + rope_scaling for full_attention and
// rope_local_base_freq for sliding_attention (HF's defaults 1e6 and 1e4).
std::vector<float> gemma3_inv_freq(const JsonFile& c, const std::string& type, int64_t head_dim,
                                   std::vector<std::string>& rewrites) {
  nlohmann::json doc = nlohmann::json::object();
  const nlohmann::json& raw = c.raw();
  const bool nested =
      raw.contains("rope_parameters") && raw["rope_parameters"].is_object() &&
      (raw["rope_parameters"].contains("full_attention") || raw["rope_parameters"].contains("sliding_attention"));
  if (nested) {
    const auto& rp = raw["rope_parameters"];
    doc["rope_parameters"] =
        rp.contains(type) && rp[type].is_object() ? rp[type] : nlohmann::json{{"rope_type", "default"}};
    if (!doc["rope_parameters"].contains("rope_theta"))
      doc["rope_parameters"]["rope_theta"] = type == "full_attention" ? 1e6 : 1e4;
  } else if (type == "full_attention") {
    doc["rope_theta"] = c.find_number("rope_theta").value_or(1e6);
    if (raw.contains("rope_scaling") && !raw["rope_scaling"].is_null()) doc["rope_scaling"] = raw["rope_scaling"];
  } else {
    doc["rope_theta"] = c.find_number("rope_local_base_freq").value_or(1e4);
  }
  if (raw.contains("partial_rotary_factor")) doc["partial_rotary_factor"] = raw["partial_rotary_factor"];
  std::vector<std::string> lines;
  std::vector<float> inv =
      rope_inv_freq(JsonFile(c.origin() + " (RoPE of the " + type + " layers)", doc), head_dim, lines);
  for (const std::string& l : lines) rewrites.push_back(type + " layers: " + l);
  return inv;
}

}  // namespace

std::vector<std::string> gemma_family_applied_keys() {
  return {"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
          "hidden_activation",      "sliding_window",          "layer_types"};
}

DecoderModel describe_gemma_family(const Checkpoint& ckpt, GemmaGeneration gen) {
  const JsonFile& c = ckpt.config();
  DecoderModel m = describe_post_norm_decoder(ckpt, 1e-6);
  const ModelDims& d = m.dims;
  read_activation(c, "hidden_activation", {"gelu_pytorch_tanh"}, "GeGLU with gelu_pytorch_tanh only");
  if (c.find_bool("use_bidirectional_attention").value_or(false))
    throw Unsupported(c.where("use_bidirectional_attention") +
                      ": true is not supported (the runtime's mask is causal)");
  set_norm_weight_offset(m, 1.0f);
  for (LayerDescription& l : m.layers) l.ffn.body = GegluMlp{std::get<SwigluSpec>(l.ffn.body)};
  // HF multiplies the looked-up rows (Gemma's scaled embedding); the runtime
  // feeds them raw from embeddings.bin, so the graph does it.
  const float embed_scale = static_cast<float>(std::sqrt(static_cast<double>(d.hidden)));
  m.embed = [embed_scale](GraphBuilder& g, const DecoderContext&, const Value& embeds) {
    auto s = g.scope("embed_tokens");
    const Value factor = g.scalar("embed_scale", embed_scale);
    return g.mul(embeds, factor);
  };
  // modeling_gemma2/3 take query_pre_attn_scalar**-0.5: null fails there, it is not the default.
  if (c.raw().contains("query_pre_attn_scalar") && c.raw()["query_pre_attn_scalar"].is_null())
    throw BadInput(c.where("query_pre_attn_scalar") +
                   ": null is not a score scale (transformers raises it to "
                   "the power -0.5); give a number, or leave the key out for the default 256");
  const double qpas = checked_number_or(c, "query_pre_attn_scalar", 256, kScaleFactor);
  m.score_divisor = static_cast<float>(std::sqrt(qpas));
  const float final_cap = softcap(c, "final_logit_softcapping", gen == GemmaGeneration::gemma2 ? 30.0 : 0.0);
  m.tail.logit_softcap = final_cap;
  const float attn_cap = softcap(c, "attn_logit_softcapping", gen == GemmaGeneration::gemma2 ? 50.0 : 0.0);

  m.sliding_window.layers = sliding_layers(c, d.layers, gen);
  bool any_sliding = false, any_full = false;
  for (bool s : m.sliding_window.layers) (s ? any_sliding : any_full) = true;
  if (any_sliding) {
    if (c.has("sliding_window") && c.raw()["sliding_window"].is_null())
      throw Unsupported(c.where("sliding_window") + ": null while layer_types has sliding_attention layers");
    m.sliding_window.window = c.find_size("sliding_window", 4096);
  }

  char buf[160];
  std::snprintf(buf, sizeof buf, "embeddings scaled by sqrt(hidden_size) = %.9g in the graph (one Mul)",
                static_cast<double>(embed_scale));
  m.rewrites.emplace_back(buf);
  m.rewrites.push_back("RMSNorms scale by (1 + w), added in float32 into one constant per norm");
  m.rewrites.push_back("GeGLU with the tanh GELU (gelu_pytorch_tanh written out: exact, no approximation)");
  std::snprintf(buf, sizeof buf, "attention scores divided by sqrt(query_pre_attn_scalar %g)", qpas);
  m.rewrites.emplace_back(buf);
  if (final_cap > 0) {
    std::snprintf(buf, sizeof buf, "final logits soft-capped: tanh(x / %g) * %g", static_cast<double>(final_cap),
                  static_cast<double>(final_cap));
    m.rewrites.emplace_back(buf);
  }

  if (gen == GemmaGeneration::gemma2) {
    m.attention_softcap = attn_cap;
    if (attn_cap > 0) {
      std::snprintf(buf, sizeof buf, "attention logits soft-capped before the mask: tanh(s / %g) * %g",
                    static_cast<double>(attn_cap), static_cast<double>(attn_cap));
      m.rewrites.emplace_back(buf);
    }
    m.theta = rope_bases_theta({rope_inv_freq(c, d.head_dim, m.rewrites)});
    return m;
  }

  // Gemma 3.
  if (attn_cap > 0)
    m.notes.push_back(c.where("attn_logit_softcapping") +
                      " is set, but transformers' Gemma 3 attention never applies it; neither does the export");
  for (LayerDescription& l : m.layers) {
    attention_spec(l).q_norm = "q_norm";
    attention_spec(l).k_norm = "k_norm";
  }
  m.rewrites.push_back("QK-Norm (1 + w) " + head_rms_norm_form(d.heads, d.kv_heads) + ", before RoPE");
  std::vector<float> local, global;
  if (any_sliding) local = gemma3_inv_freq(c, "sliding_attention", d.head_dim, m.rewrites);
  if (any_full) global = gemma3_inv_freq(c, "full_attention", d.head_dim, m.rewrites);
  if (!any_full || !any_sliding || local == global) {
    m.theta = rope_bases_theta({any_sliding ? local : global});
    return m;
  }
  // The sliding layers read base 0 (local), the full-attention layers base 1 (global).
  m.theta = rope_bases_theta({local, global});
  m.rope_bases = 2;
  for (size_t i = 0; i < m.layers.size(); ++i)
    std::get<AttentionMixer>(m.layers[i].mixer.body).rope_base = m.sliding_window.layers[i] ? 0 : 1;
  m.rewrites.push_back("two RoPE bases side by side in theta (sliding layers: entries 0.." +
                       std::to_string(d.head_dim - 1) + ", full-attention layers: " + std::to_string(d.head_dim) +
                       ".." + std::to_string(2 * d.head_dim - 1) +
                       "), each layer's tables picked by a constant MatMul");
  return m;
}

}  // namespace llm2hef::families
