#include "llm2hef/sdk/rope.hpp"

#include <cmath>
#include <numbers>

#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

namespace {

// The key the rope settings are under: rope_scaling, or transformers 5's
// rope_parameters (messages name the one the file has).
const char* rope_params_key(const JsonFile& c) {
  return c.has("rope_scaling") || !c.has("rope_parameters") ? "rope_scaling" : "rope_parameters";
}

// rope_scaling, or the v5 rope_parameters; null when neither is set.
nlohmann::json rope_params(const JsonFile& c) {
  for (const char* key : {"rope_scaling", "rope_parameters"})
    if (c.has(key)) {
      const auto& v = c.raw()[key];
      if (!v.is_object()) throw BadInput(c.where(key) + ": expected an object");
      return v;
    }
  return nullptr;
}

double number(const JsonFile& c, const nlohmann::json& p, const char* key) {
  if (!p.contains(key) || !p[key].is_number())
    throw BadInput(c.where(rope_params_key(c)) + ": '" + key + "' is required for this rope_type");
  const double v = p[key].get<double>();
  // Every scaling parameter divides or is divided by something: 0, a
  // negative or a non-finite value would write inf or NaN into theta.
  if (!std::isfinite(v) || v <= 0)
    throw BadInput(c.where(rope_params_key(c)) + ": '" + key + "' must be a positive number, got " + p[key].dump());
  return v;
}

}  // namespace

std::vector<float> rope_inv_freq(const JsonFile& c, int64_t head_dim, std::vector<std::string>& rewrites) {
  if (head_dim <= 0 || head_dim % 2) throw BadInput(c.where("head_dim") + ": must be a positive even number");
  if (auto f = c.find_number("partial_rotary_factor"); f && *f != 1.0)
    throw Unsupported(c.where("partial_rotary_factor") + ": partial rotary embeddings are not supported");
  return rope_inv_freq_dims(c, head_dim, rewrites);
}

std::vector<float> rope_inv_freq_dims(const JsonFile& c, int64_t head_dim, std::vector<std::string>& rewrites) {
  if (head_dim <= 0 || head_dim % 2)
    throw BadInput(c.where("head_dim") + ": the rotary width must be a positive even number");
  const nlohmann::json p = rope_params(c);
  // The RoPE base as transformers 5 settles it (rope_parameters.setdefault(
  // "rope_theta", config's rope_theta or 10000)): the rope dict's value, else
  // the top-level key, else 10000. Only an absent (or null) key takes the
  // default: 0 is a value, and refused like any other base that is not positive.
  double base = 10000.0;
  if (p.is_object() && p.contains("rope_theta") && !p["rope_theta"].is_null())
    base = checked_number(p["rope_theta"], c.where(rope_params_key(c)) + " 'rope_theta'", kRopeBase);
  else if (c.has("rope_theta"))
    base = checked_number(c.raw()["rope_theta"], c.where("rope_theta"), kRopeBase);

  std::string type = "default";
  for (const char* key : {"type", "rope_type"})  // rope_type wins when both are set
    if (p.is_object() && p.contains(key) && !p[key].is_null()) {
      if (!p[key].is_string())
        throw BadInput(c.where(rope_params_key(c)) + ": '" + key + "' must be a string, got " + p[key].dump());
      type = p[key].get<std::string>();
    }

  // Step by step in float32, as transformers computes its inv_freq buffer
  // (docs/architectures.md 1.3-1.4), so theta.npy matches HF's buffer (the
  // numerics contract tests allow at most 1 ulp).
  const int64_t half = head_dim / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  const float base_f = static_cast<float>(base);
  for (int64_t j = 0; j < half; ++j) {
    const float e = static_cast<float>(2 * j) / static_cast<float>(head_dim);
    const float p = static_cast<float>(std::pow(static_cast<double>(base_f), static_cast<double>(e)));
    inv[static_cast<size_t>(j)] = 1.0f / p;
  }

  char buf[256];
  if (type == "default") {
    std::snprintf(buf, sizeof buf, "RoPE theta %g into the theta resource", base);
  } else if (type == "linear") {
    const float factor = static_cast<float>(number(c, p, "factor"));
    for (auto& v : inv) v /= factor;
    std::snprintf(buf, sizeof buf, "RoPE theta %g with linear scaling x%g folded into the theta resource", base,
                  static_cast<double>(factor));
  } else if (type == "llama3") {
    const double factor_d = number(c, p, "factor"), low_d = number(c, p, "low_freq_factor"),
                 high_d = number(c, p, "high_freq_factor"), old_d = number(c, p, "original_max_position_embeddings");
    const float factor = static_cast<float>(factor_d), low = static_cast<float>(low_d), old = static_cast<float>(old_d);
    const float low_wl = static_cast<float>(old_d / low_d), high_wl = static_cast<float>(old_d / high_d);
    if (high_d <= low_d)
      throw BadInput(c.where(rope_params_key(c)) + ": high_freq_factor must be greater than low_freq_factor");
    const float band = static_cast<float>(high_d - low_d);
    const float two_pi = static_cast<float>(2.0 * std::numbers::pi);
    int smoothed = 0, divided = 0;
    for (auto& v : inv) {
      const float wavelen = (1.0f / v) * two_pi;
      if (wavelen > low_wl) {
        v = v / factor;
        ++divided;
      } else if (!(wavelen < high_wl)) {  // the smoothing band
        const float smooth = ((1.0f / wavelen) * old - low) / band;
        v = (1.0f - smooth) * v / factor + smooth * v;
        ++smoothed;
      }
    }
    std::snprintf(buf, sizeof buf,
                  "RoPE theta %g with llama3 scaling (factor %g: %d frequencies divided, %d smoothed) folded into the "
                  "theta resource",
                  base, factor_d, divided, smoothed);
  } else {
    throw Unsupported(c.where(rope_params_key(c)) + ": rope_type '" + type +
                      "' is not supported (only default, linear and llama3 fold into a constant theta)");
  }
  rewrites.emplace_back(buf);
  return inv;
}

std::vector<float> rope_theta_resource(const std::vector<float>& inv_freq) {
  std::vector<float> t = inv_freq;
  t.insert(t.end(), inv_freq.begin(), inv_freq.end());
  return t;
}

Value apply_rope(GraphBuilder& g, const Value& x, const Value& cos_tiled, const Value& sin_tiled, int64_t heads,
                 int64_t d, int64_t rotary_dim) {
  auto s = g.scope("rope");
  const int64_t rot = rotary_dim > 0 ? rotary_dim : d;
  const int64_t w = heads * d, half = rot / 2;
  Value r = g.constant_rows("rotate_half", {w, w}, [=](int64_t r0, int64_t r1, std::span<float> out) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t h = i / d, k = i % d;
      if (k >= rot) continue;  // a pass-through dimension: no row
      // (x R)[j] = -x[j + rot/2] for j < rot/2, x[j - rot/2] for rot/2 <= j < rot.
      const int64_t col = h * d + (k < half ? k + half : k - half);
      out[static_cast<size_t>((i - r0) * w + col)] = k < half ? 1.0f : -1.0f;
    }
  });
  // x*cos first, then (x R)*sin: torch's order for `x * cos + (x @ R) * sin`.
  Value with_cos = g.mul(x, cos_tiled, "cos/Mul");
  Value rotated = g.matmul(x, r, "rotate_half/MatMul");
  return g.add(with_cos, g.mul(rotated, sin_tiled, "sin/Mul"));
}

}  // namespace llm2hef::sdk
