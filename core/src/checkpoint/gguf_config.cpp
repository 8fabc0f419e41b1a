// config.json from GGUF metadata: the keys every family shares, and the
// table's row for the family's own (gguf/<family>.cpp, family.hpp). Keys:
// gguf-py constants.py (Keys.LLM, Keys.Attention, Keys.Rope,
// Keys.ShortConv); what each family's converter writes:
// conversion/<family>.py set_gguf_parameters. docs/gguf.md has the table
// this file and the rows implement.
#include "llm2hef/core/checkpoint/gguf_config.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "gguf/config_builder.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

using Json = nlohmann::json;

std::string kind_of(const nlohmann::ordered_json& v) {
  if (v.is_boolean()) return "a bool";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a float";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "a " + std::string(v.type_name());
}

// GGUF stores most hyper-parameters as float32; written back as the shortest

// GGUF's RoPE scaling types (llama.cpp LLAMA_ROPE_SCALING_TYPES); llama.cpp
// stops on any other.
bool is_gguf_scaling_type(const std::string& t) {
  return t == "none" || t == "linear" || t == "yarn" || t == "longrope";
}

[[noreturn]] void refuse_llama3(const std::string& origin, const std::string& why) {
  throw Unsupported(origin + ": tensor 'rope_freqs.weight' (Llama 3 RoPE frequency factors): " + why +
                    "; its HF rope_scaling cannot be rebuilt exactly");
}

// rope_freqs.weight's factors, each placed in Llama 3's rule: 1 (kept), the
// largest (divided), or between (smoothed).
struct Llama3Factors {
  std::vector<float> factors;
  std::vector<double> wavelen;             // as the converter computes them (they grow with the index)
  double factor = 0.0;                     // the largest
  std::vector<size_t> band;                // the smoothed ones
  double last_one = 0.0, first_top = 0.0;  // longest kept and shortest divided wavelength
};

Llama3Factors place_llama3_factors(const std::vector<float>& factors, double theta, int64_t dim,
                                   const std::string& origin) {
  Llama3Factors f;
  f.factors = factors;
  double least = factors.front();
  for (float v : factors) f.factor = std::max(f.factor, static_cast<double>(v)), least = std::min(least, double{v});
  if (least < 1.0)
    refuse_llama3(origin, "factor " + gguf::number_text(least) +
                              " is below 1; Llama 3's rule divides each frequency by 1 to factor");
  // float32 frequencies, double wavelengths.
  f.wavelen.resize(factors.size());
  for (size_t i = 0; i < factors.size(); ++i) {
    const float freq =
        1.0f / static_cast<float>(std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(dim)));
    f.wavelen[i] = 2 * M_PI / static_cast<double>(freq);
  }
  const auto is_one = [](double v) { return v <= 1.0 + 1e-6; };
  const auto is_top = [&](double v) { return v >= f.factor * (1 - 1e-6); };
  int place = 0;  // 0 kept, 1 smoothed, 2 divided: never decreasing along the wavelengths
  for (size_t i = 0; i < factors.size(); ++i) {
    const double v = factors[i];
    const int p = is_one(v) ? 0 : is_top(v) ? 2 : 1;
    if (p < place) refuse_llama3(origin, "the factors do not grow with the wavelength, as Llama 3's rule makes them");
    place = p;
    if (p == 0) f.last_one = f.wavelen[i];
    if (p == 1) f.band.push_back(i);
    if (p == 2 && f.first_top == 0.0) f.first_top = f.wavelen[i];
  }
  return f;
}

// s of a smoothed factor: 1/f = (1-s)/factor + s.
double llama3_smooth(const Llama3Factors& f, double v) { return (1.0 / v - 1.0 / f.factor) / (1.0 - 1.0 / f.factor); }

// The first stored factor the rule (low 1) does not give, or -1.
int64_t llama3_mismatch(const Llama3Factors& f, double high, double original) {
  if (!(high > 1.0) || !(original > 0.0) || !std::isfinite(high) || !std::isfinite(original)) return 0;
  for (size_t i = 0; i < f.factors.size(); ++i) {
    double expect = 1.0;
    if (f.wavelen[i] > original)
      expect = f.factor;
    else if (f.wavelen[i] >= original / high) {
      const double s = (original / f.wavelen[i] - 1.0) / (high - 1.0);
      expect = 1.0 / ((1.0 - s) / f.factor + s);
    }
    if (std::fabs(expect - f.factors[i]) > 1e-5 * expect) return static_cast<int64_t>(i);
  }
  return -1;
}

// (high_freq_factor, original_max_position_embeddings) pairs to try, in
// order (ConfigBuilder::llama3_rope says why).
std::vector<std::pair<double, double>> llama3_candidates(const Llama3Factors& f, const std::string& origin) {
  const auto nice = [](double v) {
    return std::fabs(v - std::round(v)) < 1e-3 * std::max(1.0, std::fabs(v)) ? std::round(v) : v;
  };
  std::vector<std::pair<double, double>> candidates;
  if (f.band.size() >= 2) {
    // s = a / wavelen - b: a = original / (high - 1), b = 1 / (high - 1).
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i : f.band) {
      const double x = 1.0 / f.wavelen[i], s = llama3_smooth(f, f.factors[i]);
      sx += x, sy += s, sxx += x * x, sxy += x * s;
    }
    const double n = static_cast<double>(f.band.size());
    const double a = (n * sxy - sx * sy) / (n * sxx - sx * sx), b = (sx * a - sy) / n;
    if (!(a > 0) || !(b > 0)) refuse_llama3(origin, "the factors do not follow Llama 3's rule");
    const double high = nice(1.0 + 1.0 / b);
    candidates.emplace_back(high, nice(a * (high - 1.0)));
    return candidates;
  }
  candidates.emplace_back(4.0, 8192.0);
  // The band must hold the smoothed wavelength (if any) and nothing else:
  // original below the shortest divided wavelength, original / high above
  // the longest kept one.
  const double top = f.first_top;  // > 0: some factor is the largest
  const double last_one = f.last_one;
  if (f.band.size() == 1) {
    const double w = f.wavelen[f.band[0]], s = llama3_smooth(f, f.factors[f.band[0]]);
    // original = w (1 + s (high - 1)); high below where either bound is met.
    double high_max = s > 0 ? 1.0 + (top / w - 1.0) / s : 1e9;
    if (last_one > 0 && last_one > w * s) high_max = std::min(high_max, w * (1.0 - s) / (last_one - w * s));
    const double high = high_max > 4.0 ? 4.0 : (1.0 + high_max) / 2.0;
    const double original = std::round(w * (1.0 + s * (high - 1.0)));
    candidates.emplace_back(1.0 + (original / w - 1.0) / s, original);  // original a whole number
    candidates.emplace_back(high, w * (1.0 + s * (high - 1.0)));
  } else {
    const double high = last_one > 0 ? std::min(4.0, std::sqrt(top / last_one)) : 4.0;
    const double original = last_one > 0 ? std::sqrt(high * last_one * top) : top / 2.0;
    candidates.emplace_back(high, std::round(original));
    candidates.emplace_back(high, original);
  }
  return candidates;
}

}  // namespace

std::string GgufMetadata::where(const std::string& key) const { return origin_ + ": metadata key '" + key + "'"; }

std::optional<int64_t> GgufMetadata::find_size(const std::string& key, int64_t max) const {
  auto it = m_.find(key);
  if (it == m_.end()) return std::nullopt;
  if (!it->is_number_integer()) throw BadInput(where(key) + " is " + kind_of(*it) + ", expected an integer");
  if (it->is_number_unsigned() ? it->get<uint64_t>() > static_cast<uint64_t>(max)
                               : it->get<int64_t>() < 0 || it->get<int64_t>() > max)
    throw BadInput(where(key) + " is " + it->dump() + ", expected 0.." + std::to_string(max));
  return it->get<int64_t>();
}

int64_t GgufMetadata::get_size(const std::string& key, int64_t max) const {
  if (auto v = find_size(key, max)) return *v;
  throw BadInput(where(key) + " is required but missing");
}

std::optional<double> GgufMetadata::find_number(const std::string& key) const {
  auto it = m_.find(key);
  if (it == m_.end()) return std::nullopt;
  if (!it->is_number()) throw BadInput(where(key) + " is " + kind_of(*it) + ", expected a number");
  return it->get<double>();
}

std::optional<bool> GgufMetadata::find_bool(const std::string& key) const {
  auto it = m_.find(key);
  if (it == m_.end()) return std::nullopt;
  if (!it->is_boolean()) throw BadInput(where(key) + " is " + kind_of(*it) + ", expected a bool");
  return it->get<bool>();
}

std::optional<std::string> GgufMetadata::find_string(const std::string& key) const {
  auto it = m_.find(key);
  if (it == m_.end()) return std::nullopt;
  if (!it->is_string()) throw BadInput(where(key) + " is " + kind_of(*it) + ", expected a string");
  return it->get<std::string>();
}

std::string GgufMetadata::get_string(const std::string& key) const {
  if (auto v = find_string(key)) return *v;
  throw BadInput(where(key) + " is required but missing");
}

namespace gguf {

double f32_decimal(double v) {
  const float f = static_cast<float>(v);
  if (static_cast<double>(f) != v || !std::isfinite(f)) return v;
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf - 1, f);
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

// (JSON would print null for nan and inf.)
std::string number_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return Json(v).dump();
}

std::optional<double> ConfigBuilder::number(const char* k) const {
  auto v = meta.find_number(key(k));
  return v ? std::optional<double>(f32_decimal(*v)) : std::nullopt;
}

bool ConfigBuilder::any_block_has(const std::string& stem, int64_t layers) const {
  for (int64_t i = 0; i < layers; ++i)
    if (has_tensor("blk." + std::to_string(i) + "." + stem)) return true;
  return false;
}

// The vocabulary is the embedding's row count: the weights are what the
// graph uses (a token list longer than the matrix could not be embedded).
int64_t ConfigBuilder::vocab_size() const {
  const GgufTensorInfo* emb = tensors.find("token_embd.weight");
  if (!emb) throw BadInput(meta.origin() + ": tensor 'token_embd.weight' (the token embedding) is missing");
  if (emb->ne.size() != 2)
    throw BadInput(meta.origin() + ": tensor 'token_embd.weight' has " + std::to_string(emb->ne.size()) +
                   " dimensions, expected 2");
  return static_cast<int64_t>(emb->ne[1]);
}

void ConfigBuilder::common() {
  c["architectures"] = Json::array({arch.hf_architecture});
  c["model_type"] = arch.model_type;
  c["torch_dtype"] = "float32";
  const int64_t hidden = meta.get_size(key("embedding_length"));
  // Bounded before anything is built per layer (LFM2's layer_types, the
  // tensor names looked up for each block): published decoders have at
  // most a few hundred blocks, and a hostile count near the 2^24 default
  // made the fuzzer run out of memory.
  constexpr int64_t kMaxBlocks = 4096;
  const int64_t layers = meta.get_size(key("block_count"), kMaxBlocks);
  const int64_t heads = meta.get_size(key("attention.head_count"));
  if (hidden == 0 || layers == 0 || heads == 0)
    throw BadInput(meta.origin() + ": metadata keys '" + key("embedding_length") + "', '" + key("block_count") +
                   "' and '" + key("attention.head_count") + "' must be positive");
  c["hidden_size"] = hidden;
  c["num_hidden_layers"] = layers;
  c["num_attention_heads"] = heads;
  // (LFM2 writes one value per layer: read by lfm2().)
  if (const auto& raw = meta.raw();
      !(raw.contains(key("attention.head_count_kv")) && raw[key("attention.head_count_kv")].is_array()))
    if (auto kv = meta.find_size(key("attention.head_count_kv"))) c["num_key_value_heads"] = *kv;
  if (auto ctx = meta.find_size(key("context_length"), int64_t{1} << 40)) {
    if (*ctx == 0) throw BadInput(meta.where(key("context_length")) + " is 0; a context length must be positive");
    c["max_position_embeddings"] = *ctx;
  }
  if (auto ff = meta.find_size(key("feed_forward_length"))) c["intermediate_size"] = *ff;
  if (auto hd = meta.find_size(key("attention.key_length"))) {
    if (*hd == 0) throw BadInput(meta.where(key("attention.key_length")) + " is 0; a head size must be positive");
    c["head_dim"] = *hd;
  }
  value_length();
  dense_only();
  if (auto eps = number("attention.layer_norm_rms_epsilon")) c["rms_norm_eps"] = *eps;
  if (auto eps = number("attention.layer_norm_epsilon")) c["layer_norm_eps"] = *eps;
  c["vocab_size"] = vocab_size();
  c["tie_word_embeddings"] = !has_tensor("output.weight");
  for (const auto& [gguf_key, hf_key] : {std::pair{"tokenizer.ggml.bos_token_id", "bos_token_id"},
                                         std::pair{"tokenizer.ggml.eos_token_id", "eos_token_id"},
                                         std::pair{"tokenizer.ggml.padding_token_id", "pad_token_id"}})
    if (auto id = meta.find_size(gguf_key, int64_t{1} << 31)) c[hf_key] = *id;
  rotary_dims();
  rope(hidden / heads);
}

// The converted HF families have one head_dim for queries, keys and
// values: a value length of its own would be read as the key length.
void ConfigBuilder::value_length() const {
  const std::string k = key("attention.value_length");
  const auto v = meta.find_size(k);
  if (!v) return;
  if (*v == 0) throw BadInput(meta.where(k) + " is 0; a head size must be positive");
  if (*v == head_dim()) return;
  throw Unsupported(meta.where(k) + " is " + std::to_string(*v) + " but the key length (" +
                    (c.contains("head_dim") ? "'" + key("attention.key_length") + "'" : std::string("hidden / heads")) +
                    ") is " + std::to_string(head_dim()) + ": " + arch.hf_architecture +
                    " has one head_dim for keys and values");
}

// Mixture-of-experts files of these architectures (llama.cpp reads Mixtral
// as llama with expert tensors) are not what the HF families compute.
void ConfigBuilder::dense_only() const {
  for (const char* k : {"expert_count", "expert_used_count"})
    if (const auto n = meta.find_size(key(k)); n && *n > 0)
      throw Unsupported(meta.where(key(k)) + " is " + std::to_string(*n) + ": a mixture-of-experts model; " +
                        arch.hf_architecture + " is a dense decoder and llm2hef converts no experts");
}

// <arch>.rope.dimension_count is llama.cpp's n_rot, the dimensions of each
// head that RoPE turns. Only the rows marked Rope::partial have a partial-
// rotary key in their transformers config (they read `rotary`); the other
// families' transformers code turns all of head_dim, so a smaller count is
// refused rather than exported as full rotary (llama.cpp refuses such llama
// files and applies partial rotary to the others). Rope::none (GPT-2): the
// key means nothing there.
void ConfigBuilder::rotary_dims() {
  const int64_t hd = head_dim();
  rotary = hd;
  if (family.rope == Rope::none) return;
  const std::string k = key("rope.dimension_count");
  const auto dims = meta.find_size(k);
  if (!dims || *dims == hd) return;
  if (*dims == 0 || *dims % 2 != 0 || *dims > hd)
    throw BadInput(meta.where(k) + " is " + std::to_string(*dims) +
                   ", expected an even number of dimensions from 2 to head_dim (" + std::to_string(hd) + ")");
  if (family.rope != Rope::partial)
    throw Unsupported(meta.where(k) + " is " + std::to_string(*dims) + " but head_dim is " + std::to_string(hd) +
                      ": RoPE on part of each head, which " + arch.hf_architecture +
                      " does not have (it turns all of head_dim; llm2hef converts partial rotary for " +
                      family_names([](const Family& f) { return f.rope == Rope::partial; }) + ")");
  rotary = *dims;
}

// A per-frequency RoPE factor tensor (rope_freqs, rope_factors_long /
// _short), every value checked: a factor divides a frequency, so zero,
// negative or non-finite ones are no model's.
std::vector<float> ConfigBuilder::rope_factors(const char* name) const {
  std::vector<float> v = tensors.read(name);
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]) || !(v[i] > 0))
      throw BadInput(meta.origin() + ": tensor '" + name + "' holds " + number_text(v[i]) + " at index " +
                     std::to_string(i) + "; RoPE frequency factors must be positive and finite");
  return v;
}

int64_t ConfigBuilder::head_dim() const {
  return c.contains("head_dim") ? c["head_dim"].get<int64_t>()
                                : c["hidden_size"].get<int64_t>() / c["num_attention_heads"].get<int64_t>();
}

// rope.freq_base and rope.scaling.* (linear and yarn written back as HF's
// rope_scaling; the adapters decide what they can convert). llama's
// rope_freqs tensor is the Llama 3 rule evaluated per frequency.
//
// The factor tensors say how RoPE is scaled on their own; a scaling type
// declared beside them (other than none, or longrope with Phi-3's long /
// short factors, which llama.cpp's converter writes together) contradicts
// them, and is refused rather than one silently winning.
void ConfigBuilder::rope(int64_t default_head_dim) {
  Json scaling = Json::object();
  const double theta = number("rope.freq_base").value_or(10000.0);
  c["rope_theta"] = theta;
  const std::string type_key = key("rope.scaling.type"), factor_key = key("rope.scaling.factor");
  const std::optional<std::string> type = meta.find_string(type_key);
  if (type && !is_gguf_scaling_type(*type))
    throw BadInput(meta.where(type_key) + " is '" + *type +
                   "', not a RoPE scaling type GGUF defines (none, linear, yarn, longrope)");
  const bool declared = type && *type != "none";
  const std::optional<double> factor = number("rope.scaling.factor");
  // 0 is llama.cpp's "not set" (it scales by 1 / factor, 0 read as 1):
  // accepted where no scaling is declared, refused where one is.
  if (factor && (!std::isfinite(*factor) || *factor < 0 || (declared && *factor == 0)))
    throw BadInput(meta.where(factor_key) + " is " + number_text(*factor) +
                   (declared ? " with '" + type_key + "' '" + *type + "'" : std::string()) +
                   "; a RoPE scaling factor must be positive and finite");
  if (declared) {
    scaling["rope_type"] = *type;
    if (factor) scaling["factor"] = *factor;
    if (auto orig = meta.find_size(key("rope.scaling.original_context_length"), int64_t{1} << 40))
      scaling["original_max_position_embeddings"] = *orig;
  } else if (factor && *factor != 1.0 && *factor != 0.0) {
    throw BadInput(meta.where(factor_key) + " is " + number_text(*factor) + " but '" + type_key +
                   "' is absent; which RoPE scaling is meant is unclear");
  }
  for (const char* t : {"rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight"})
    if (declared && has_tensor(t) && !(*type == "longrope" && std::string_view(t) != "rope_freqs.weight"))
      throw BadInput(meta.origin() + ": tensor '" + t + "' (per-frequency RoPE factors) and metadata key '" + type_key +
                     "' ('" + *type + "') both set the RoPE scaling; which one the model uses is unclear");
  if (has_tensor("rope_freqs.weight")) llama3_rope(theta, default_head_dim, scaling);
  if (!scaling.empty()) c["rope_scaling"] = scaling;
}

// conversion/llama.py generate_extra_tensors writes, for rope_type llama3,
// one factor per frequency from (factor, low_freq_factor,
// high_freq_factor, original_max_position_embeddings); GGUF keeps only the
// factors, and they are the model (llama.cpp divides each frequency by its
// factor). The rule: wavelengths below original/high keep factor 1, those
// above original/low get the largest factor, and between them
// 1/f = (1-s)/factor + s with s = (original/wavelen - low)/(high - low).
// Only the ratios matter, so low_freq_factor is taken as 1. With two or
// more factors strictly between 1 and the largest, the line through them
// determines high and original. With fewer (head_dim <= 32 puts at most
// one frequency in the band) many parameter sets give the same factors:
// Meta's published ones (high 4, original 8192, every Llama 3.x release)
// are tried first, then one solved from the stored factors and the gaps
// around the band. Whatever is written must reproduce every stored factor.
void ConfigBuilder::llama3_rope(double theta, int64_t default_head_dim, Json& scaling) {
  const std::vector<float> factors = rope_factors("rope_freqs.weight");
  const int64_t dim = c.contains("head_dim") ? c["head_dim"].get<int64_t>() : default_head_dim;
  if (static_cast<int64_t>(factors.size()) * 2 != dim)
    throw BadInput(meta.origin() + ": tensor 'rope_freqs.weight' has " + std::to_string(factors.size()) +
                   " values, expected head_dim / 2 = " + std::to_string(dim / 2));
  if (std::all_of(factors.begin(), factors.end(), [](float f) { return f == 1.0f; })) return;  // no scaling
  const Llama3Factors f = place_llama3_factors(factors, theta, dim, meta.origin());
  int64_t bad = 0;
  for (const auto& [high, original] : llama3_candidates(f, meta.origin())) {
    bad = llama3_mismatch(f, high, original);
    if (bad >= 0) continue;
    const bool whole = original == std::round(original);
    scaling = {{"rope_type", "llama3"},
               {"factor", f32_decimal(f.factor)},
               {"low_freq_factor", 1.0},
               {"high_freq_factor", high},
               {"original_max_position_embeddings", whole ? Json(static_cast<int64_t>(original)) : Json(original)}};
    note("RoPE: Llama 3 scaling rebuilt from rope_freqs.weight: factor " + number_text(f.factor) +
         ", low_freq_factor 1, high_freq_factor " + number_text(high) + ", original_max_position_embeddings " +
         (whole ? std::to_string(static_cast<int64_t>(original)) : number_text(original)) +
         (f.band.size() >= 2 ? std::string()
                             : " (" + std::to_string(f.band.size()) +
                                   " factor(s) between 1 and the largest leave the rule's parameters open; these "
                                   "reproduce every stored factor)"));
    return;
  }
  const auto i = static_cast<size_t>(std::max<int64_t>(bad, 0));
  refuse_llama3(meta.origin(), "factor " + number_text(factors[i]) + " at frequency " + std::to_string(i) +
                                   " is not what Llama 3's rule gives for the factors around it");
}

void ConfigBuilder::llama_family(bool attention_bias) {
  const int64_t layers = c["num_hidden_layers"];
  c["hidden_act"] = "silu";
  // (Writing Qwen2's key, true from the q bias, made the Llama-family
  // description announce an o_proj bias.)
  if (attention_bias) c["attention_bias"] = any_block_has("attn_q.bias", layers);
  c["mlp_bias"] = any_block_has("ffn_up.bias", layers);
}

}  // namespace gguf

GgufConfig gguf_config(const GgufMetadata& meta, const GgufArch& arch, const GgufTensorAccess& tensors) {
  const gguf::Family* family = gguf::find_family(arch.gguf);
  if (!family) throw InternalError("gguf_config: no row for architecture '" + arch.gguf + "'");
  gguf::ConfigBuilder b(meta, *family, arch, tensors);
  b.common();
  if (family->config) family->config(b);
  return std::move(b.out);
}

}  // namespace llm2hef::core
