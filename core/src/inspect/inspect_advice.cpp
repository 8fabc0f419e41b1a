#include "llm2hef/core/inspect/inspect_advice.hpp"

#include <algorithm>
#include <cstdio>

#include "llm2hef/core/inspect/decode_speed.hpp"
#include "llm2hef/core/runtime/host_inputs.hpp"

namespace llm2hef::core {

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string gib_text(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / kGiB);
  return buf;
}

std::string gb_text(double bytes) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f GB", bytes / kGiB);
  return buf;
}

// calibrate.py's constants (estimate_peak and the lines above it); a change
// there is a change here.
constexpr double kInterpreterBytes = 400.0 * 1024 * 1024;
constexpr double kWeightCopiesProxy = 2.4;
constexpr double kFeedCacheBytes = 512.0 * 1024 * 1024;
constexpr double kTransientFactor = 5;

sdk::RuntimeSizes with_cache(sdk::RuntimeSizes s, int64_t cache) {
  s.cache = cache;
  return s;
}

// The largest cache in 1..sizes.cache for which `need` stays within `ram`
// (0 when none): every need here grows with the cache.
template <class Need>
int64_t largest_cache_within(const sdk::RuntimeSizes& sizes, double ram, Need need) {
  int64_t lo = 0, hi = sizes.cache;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (need(with_cache(sizes, mid)) <= ram)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

}  // namespace

double largest_shipped_model_bytes() {
  constexpr double params = 3212749824.0, vocab = 128256, hidden = 3072;
  const double embed = vocab * hidden;
  // Tied: the head comes back as its own on-chip tensor, so the chip holds every parameter.
  return params * 0.5 + kv_cache_bytes(28, 24, 128, 2048) + embed * 2.0;
}

std::optional<std::string> fidelity_warning(int64_t hidden) {
  if (hidden < kFidelityLossHidden) return std::nullopt;
  return "hidden size " + std::to_string(hidden) + " is in the range (>= " + std::to_string(kFidelityLossHidden) +
         ") where fidelity on real hardware was found to drop (prefill cosine 0.858 on Qwen2.5-0.5B, cause "
         "unknown; docs/hailo-contract.md section 12): run `llm2hef calibrate OUT` on the export before compile.py, "
         "which applies the OUT/quantization.json it writes (docs/quantization.md), then check on the chip "
         "(docs/on-device-check.md)";
}

double calibrate_peak_bytes(const sdk::ModelDims& d, const sdk::RuntimeSizes& s, double graph_weights) {
  const auto f = [](int64_t v) { return static_cast<double>(v); };
  const double n = f(s.cache);
  // The graph's inputs as the manifest lists them: embeddings [1, N, hidden],
  // mask [1, N, heads * N], four pe tables [1, N, T].
  const double inputs = 4.0 * (n * f(d.hidden) + n * f(d.heads) * n + 4.0 * n * f(s.theta));
  // The largest activation: the [heads, N, N] scores, or an FFN's [N, intermediate].
  const double largest = 4.0 * std::max(f(d.heads) * n * n, n * f(std::max(d.intermediate, d.hidden)));
  return kInterpreterBytes + 4.0 * graph_weights * kWeightCopiesProxy + 2.0 * inputs + kFeedCacheBytes +
         kTransientFactor * largest;
}

std::optional<std::string> calibration_memory_warning(const sdk::ModelDims& d, const sdk::RuntimeSizes& s,
                                                      double graph_weights, int64_t samples) {
  const double calibrate = calibrate_peak_bytes(d, s, graph_weights);
  const double optimize = calibration_ram_bytes(s, samples);
  const double smallest = kDfcMachineRamBytes[0];
  if (calibrate <= smallest && optimize <= smallest) return std::nullopt;
  std::string why = "calibration needs more RAM than a " + gb_text(smallest) + " machine has at cache " +
                    std::to_string(s.cache) + ": `llm2hef calibrate` about " + gib_text(calibrate) +
                    " (docs/quantization.md), compile.py's optimize about " + gib_text(optimize) + " for " +
                    std::to_string(samples) + " samples beside the DFC's 16 GB.";
  for (const double ram : kDfcMachineRamBytes) {
    const int64_t cal_cache = largest_cache_within(s, ram, [&](const sdk::RuntimeSizes& t) {
      return calibrate_peak_bytes(d, t, graph_weights);
    });
    const int64_t opt_cache =
        largest_cache_within(s, ram, [&](const sdk::RuntimeSizes& t) { return calibration_ram_bytes(t, samples); });
    const double per_sample = static_cast<double>(calibration_sample_bytes(s));
    const double room = ram - static_cast<double>(kDfcMinimumRamBytes);
    const int64_t fit_samples = room <= 0 ? 0 : std::max<int64_t>(0, static_cast<int64_t>(room / per_sample) - 1);
    why += " On " + gb_text(ram) + ": ";
    if (calibrate <= ram && optimize <= ram) {
      why += "both fit.";
      continue;
    }
    why += calibrate <= ram ? "calibrate fits"
           : cal_cache > 0  ? "calibrate fits at --cache " + std::to_string(cal_cache)
                            : "calibrate does not fit at any cache";
    if (optimize <= ram) {
      why += ", compile.py fits.";
      continue;
    }
    std::string ways;
    if (fit_samples >= 1) ways = "with export --calib-size " + std::to_string(fit_samples);
    if (opt_cache > 0) ways += (ways.empty() ? "" : " or ") + std::string("at --cache ") + std::to_string(opt_cache);
    why += ways.empty() ? ", compile.py does not fit at any cache." : ", compile.py fits " + ways + ".";
  }
  return why;
}

}  // namespace llm2hef::core
