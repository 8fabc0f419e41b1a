#include "llm2hef/sdk/partial_rotary.hpp"

#include <cmath>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/rope.hpp"

namespace llm2hef::sdk {

namespace {

// The rope dict (rope_scaling, else rope_parameters), or null.
const nlohmann::json* rope_dict(const nlohmann::json& raw) {
  for (const char* key : {"rope_scaling", "rope_parameters"})
    if (raw.contains(key) && raw[key].is_object()) return &raw[key];
  return nullptr;
}

}  // namespace

JsonFile resolve_rope_keys(const JsonFile& c, const RopeKeys& keys) {
  nlohmann::json doc = c.raw();
  const nlohmann::json* dict = rope_dict(doc);
  auto settle = [&](const char* key, const char* alias, double fallback) {
    if (dict && dict->contains(key)) {
      if (!(*dict)[key].is_number())
        throw BadInput(c.where("rope_parameters") + ": '" + key + "' must be a number, got " + (*dict)[key].dump());
      return (*dict)[key].get<double>();
    }
    if (c.has(key)) return c.get_number(key);
    if (alias && c.has(alias)) return c.get_number(alias);
    return fallback;
  };
  const double base = settle("rope_theta", keys.base_alias, 10000.0);
  const double factor = settle("partial_rotary_factor", keys.factor_alias, keys.default_factor);
  doc["rope_theta"] = base;
  doc["partial_rotary_factor"] = factor;
  return JsonFile(c.origin(), doc);
}

int64_t rotary_dims(const JsonFile& c, int64_t head_dim) {
  const double f = c.get_number("partial_rotary_factor");
  if (!std::isfinite(f) || f <= 0 || f > 1)
    throw BadInput(c.where("partial_rotary_factor") + ": must be in (0, 1], got " + std::to_string(f));
  const auto rot = static_cast<int64_t>(static_cast<double>(head_dim) * f);  // Python's int(): truncation
  if (rot <= 0 || rot % 2 != 0)
    throw Unsupported(c.where("partial_rotary_factor") + ": " + std::to_string(f) + " x head_dim " +
                      std::to_string(head_dim) + " gives " + std::to_string(rot) +
                      " rotary dimensions; rotate_half needs a positive even number");
  return rot;
}

std::vector<float> partial_rotary_theta(const std::vector<float>& inv_freq, int64_t head_dim) {
  std::vector<float> t(static_cast<size_t>(head_dim), 0.0f);
  const size_t half = inv_freq.size();
  if (2 * half > t.size()) throw InternalError("partial_rotary_theta: more frequencies than head_dim/2");
  for (size_t j = 0; j < half; ++j) t[j] = t[j + half] = inv_freq[j];
  return t;
}

PartialRope read_partial_rope(const JsonFile& config, int64_t head_dim, const RopeKeys& keys,
                              std::vector<std::string>& rewrites) {
  const JsonFile c = resolve_rope_keys(config, keys);
  PartialRope r;
  r.rotary_dim = rotary_dims(c, head_dim);
  r.inv_freq = rope_inv_freq_dims(c, r.rotary_dim, rewrites);
  r.theta = partial_rotary_theta(r.inv_freq, head_dim);
  if (r.rotary_dim < head_dim)
    rewrites.push_back("partial rotary: RoPE on the first " + std::to_string(r.rotary_dim) + " of " +
                       std::to_string(head_dim) +
                       " dimensions per head; their theta entries are 0 elsewhere (cos 1, sin 0)");
  return r;
}

}  // namespace llm2hef::sdk
