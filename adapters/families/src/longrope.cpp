#include "llm2hef/families/longrope.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::families {

namespace {

// The key holding the rope dict: rope_scaling, or the v5 rope_parameters.
const char* rope_key(const JsonFile& c) {
  for (const char* key : {"rope_scaling", "rope_parameters"})
    if (c.raw().contains(key) && c.raw()[key].is_object()) return key;
  throw BadInput(c.where("rope_scaling") + ": longrope needs a rope_scaling (or rope_parameters) object");
}

std::vector<double> factor_list(const JsonFile& c, const char* dict, const char* key, int64_t count) {
  const nlohmann::json& p = c.raw()[dict];
  if (!p.contains(key) || !p[key].is_array())
    throw BadInput(c.where(dict) + ": '" + key + "' must be a list of numbers");
  std::vector<double> out;
  for (const auto& v : p[key]) {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
      throw BadInput(c.where(dict) + ": '" + key + "' must hold positive numbers, got " + v.dump());
    out.push_back(v.get<double>());
  }
  if (static_cast<int64_t>(out.size()) != count)
    throw BadInput(c.where(dict) + ": '" + key + "' has " + std::to_string(out.size()) +
                   " entries, the rotary width needs " + std::to_string(count));
  return out;
}

}  // namespace

LongRope longrope_inv_freq(const JsonFile& c, int64_t rotary_dim, int64_t original_max) {
  const char* dict = rope_key(c);
  const nlohmann::json& p = c.raw()[dict];
  const int64_t half = rotary_dim / 2;
  const std::vector<double> short_f = factor_list(c, dict, "short_factor", half);
  const std::vector<double> long_f = factor_list(c, dict, "long_factor", half);
  if (original_max <= 0) throw BadInput(c.where("original_max_position_embeddings") + ": must be a positive integer");

  // transformers: factor = rope dict's "factor", else max_position_embeddings
  // / original_max_position_embeddings; attention_factor = the dict's, else
  // sqrt(1 + ln(factor) / ln(original_max)) when factor > 1, else 1.
  // A stated factor is checked as transformers' _validate_longrope_parameters
  // asks (>= 1); the attention factor multiplies cos and sin, so it is a
  // scale factor.
  const std::string in_dict = c.where(dict) + " '";
  double factor = 0;
  if (p.contains("factor") && !p["factor"].is_null()) {
    factor = checked_number(p["factor"], in_dict + "factor'", kRopeScalingFactor);
  } else {
    factor = static_cast<double>(c.get_int("max_position_embeddings")) / static_cast<double>(original_max);
  }
  double attention = 1.0;
  if (p.contains("attention_factor") && !p["attention_factor"].is_null()) {
    attention = checked_number(p["attention_factor"], in_dict + "attention_factor'", kScaleFactor);
  } else if (factor > 1.0) {
    attention = std::sqrt(1.0 + std::log(factor) / std::log(static_cast<double>(original_max)));
  }

  const bool equal = short_f == long_f;
  // Step by step in float32 as transformers: 1 / (ext * base ** (2j / dim)).
  // resolve_rope_keys copied the base to the top level; name the key the file has.
  const bool base_in_dict = p.contains("rope_theta") && !p["rope_theta"].is_null();
  const float base =
      static_cast<float>(checked_number(c.raw().contains("rope_theta") ? c.raw()["rope_theta"] : nlohmann::json(),
                                        base_in_dict ? in_dict + "rope_theta'" : c.where("rope_theta"), kRopeBase));
  LongRope r;
  r.attention_factor = static_cast<float>(attention);
  if (!equal) {
    r.largest_exact_cache = original_max;
    r.largest_exact_cache_reason = c.where(dict) +
                                   ": longrope uses long_factor once a sequence exceeds "
                                   "original_max_position_embeddings " +
                                   std::to_string(original_max) +
                                   " and short_factor below it, which one constant theta cannot do";
  }
  r.inv_freq.resize(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j) {
    const float e = static_cast<float>(2 * j) / static_cast<float>(rotary_dim);
    const float pw = static_cast<float>(std::pow(static_cast<double>(base), static_cast<double>(e)));
    const float ext = static_cast<float>(short_f[static_cast<size_t>(j)]);
    r.inv_freq[static_cast<size_t>(j)] = 1.0f / (ext * pw);
  }
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "longrope: theta %g with the %s factors folded into the theta resource (exact up to a cache of %lld%s); "
      "cos/sin attention factor %.6g as a Mul of the rotary dimensions of q and k",
      static_cast<double>(base), equal ? "short (= long)" : "short", static_cast<long long>(original_max),
      equal ? " and beyond" : "", attention);
  r.rewrite = buf;
  return r;
}

decltype(AttentionBlockSpec::before_rope) longrope_attention_scale(float factor, int64_t rotary_dim) {
  if (factor == 1.0f) return {};
  return [factor, rotary_dim](GraphBuilder& g, const Value& x, int64_t heads, int64_t head_dim) {
    const int64_t rot = rotary_dim > 0 ? rotary_dim : head_dim;
    std::vector<float> f(static_cast<size_t>(heads * head_dim), 1.0f);
    for (int64_t i = 0; i < heads * head_dim; ++i)
      if (i % head_dim < rot) f[static_cast<size_t>(i)] = factor;
    const Value c = g.constant("rope_factor", {heads * head_dim}, f);
    return g.mul(x, c, "rope_factor/Mul");
  };
}

}  // namespace llm2hef::families
