#include "llm2hef/families/scalar_multipliers.hpp"

#include <cmath>
#include <cstdio>

#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::families {

namespace {

std::string line(const char* what, double value, const char* where) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s %.9g %s", what, value, where);
  return buf;
}

// A Granite multiplier: GraniteConfig's default when absent. null is not
// "neutral": modeling_granite multiplies by the value, and None fails there.
double multiplier(const JsonFile& c, const char* key, double fallback) {
  if (c.raw().contains(key) && c.raw()[key].is_null())
    throw BadInput(c.where(key) +
                   ": null is not a multiplier (transformers multiplies by it); give a number, or "
                   "leave the key out for GraniteConfig's default");
  return checked_number_or(c, key, fallback, kScaleFactor);
}

}  // namespace

std::vector<std::string> ScalarMultipliers::rewrites() const {
  std::vector<std::string> out;
  if (embedding != 1.0)
    out.push_back(line("embedding multiplier", embedding,
                       "as a Mul on inputs_embeds (embeddings.bin stays the checkpoint's table)"));
  if (attention != 0.0)
    out.push_back(
        line("attention multiplier", attention, "as the score Div by its inverse (replaces 1/sqrt(head_dim))"));
  if (residual != 1.0)
    out.push_back(line("residual multiplier", residual, "folded into the o_proj and down_proj weights"));
  if (logits != 1.0) out.push_back(line("logit scale", logits, "folded into the lm_head weights"));
  return out;
}

float ScalarMultipliers::score_divisor(int64_t head_dim) const {
  if (attention != 0.0) return static_cast<float>(1.0 / attention);
  return static_cast<float>(std::sqrt(static_cast<double>(head_dim)));
}

ScalarMultipliers read_granite_multipliers(const JsonFile& c) {
  ScalarMultipliers m;
  m.embedding = multiplier(c, "embedding_multiplier", 1.0);
  m.attention =
      multiplier(c, "attention_multiplier", 1.0);  // GraniteConfig's default: scores scaled by 1, not 1/sqrt(head_dim)
  m.residual = multiplier(c, "residual_multiplier", 1.0);
  m.logits = 1.0 / multiplier(c, "logits_scaling", 1.0);
  return m;
}

Value scale_by(GraphBuilder& g, const Value& x, float factor, const std::string& leaf) {
  const Value s = g.scalar(leaf, factor);
  return g.mul(x, s, leaf + "/Mul");
}

}  // namespace llm2hef::families
