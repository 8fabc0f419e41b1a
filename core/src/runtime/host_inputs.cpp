#include "llm2hef/core/runtime/host_inputs.hpp"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "llm2hef/core/manifest/export_manifest.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;

namespace {

// Whether the inputs of a cache of n positions stay within kMaxInputElements.
bool inputs_fit(const sdk::RuntimeSizes& s, int64_t n) {
  const int64_t tiles = std::max<int64_t>({s.q_tiles, s.k_tiles, 1});
  const int64_t m = kMaxInputElements;
  return n <= m / std::max<int64_t>(s.heads, 1) / n && n <= m / std::max<int64_t>(s.hidden, 1) &&
         n <= m / std::max<int64_t>(s.theta, 1) / tiles;
}

}  // namespace

int64_t largest_calibration_cache(const sdk::RuntimeSizes& sizes) {
  int64_t lo = 0, hi = kMaxInputElements;  // inputs_fit(lo), !inputs_fit(hi + 1) for any sizes >= 1
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (inputs_fit(sizes, mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

int64_t calibration_sample_bytes(const sdk::RuntimeSizes& sizes) {
  int64_t total = sizes.cache * 4;
  for (const sdk::RuntimeInput& input : sdk::kRuntimeInputs) {
    if (input.tiling != sdk::PeTiling::none) continue;
    const std::vector<int64_t> shape = sdk::graph_shape(input, sizes);
    int64_t values = 1;
    for (size_t i = shape.size() >= 2 ? shape.size() - 2 : 0; i < shape.size(); ++i) values *= shape[i];
    total += 4 * values;
  }
  return total;
}

double calibration_ram_bytes(const sdk::RuntimeSizes& sizes, int64_t samples) {
  return static_cast<double>(kDfcMinimumRamBytes) +
         static_cast<double>(samples + 1) * static_cast<double>(calibration_sample_bytes(sizes));
}

std::optional<std::string> calibration_limit_warning(const sdk::RuntimeSizes& sizes, int64_t samples) {
  const int64_t largest = largest_calibration_cache(sizes);
  if (sizes.cache <= largest) return std::nullopt;
  sdk::RuntimeSizes at_largest = sizes;
  at_largest.cache = largest;
  char ram[32];
  std::snprintf(ram, sizeof ram, "%.1f GiB", calibration_ram_bytes(at_largest, samples) / (1024.0 * 1024 * 1024));
  return "compile.py cannot calibrate cache " + std::to_string(sizes.cache) + ": its calibration inputs (built by " +
         "`llm2hef inputs`) would exceed " + std::to_string(kMaxInputElements) + " values in one tensor (the " +
         "attention mask is cache x " + std::to_string(sizes.heads) + " heads x cache); the largest cache it can " +
         "calibrate is " + std::to_string(largest) + " (--cache " + std::to_string(largest) + "), where optimize " +
         "needs about " + ram + " of RAM for " + std::to_string(samples) + " calibration samples beside the DFC";
}

namespace {

constexpr int64_t kMaxDim = int64_t{1} << 24;

// A manifest number every size below is computed from, refused beyond `limit`.
int64_t bounded(const fs::path& manifest_path, int64_t v, const char* field, int64_t limit) {
  if (v > limit)
    throw BadInput(manifest_path.string() + ": field '" + field + "': " + std::to_string(v) + " is outside 1.." +
                   std::to_string(limit));
  return v;
}

// The manifest's sizes, each within a sane bound, and the largest tensors
// built from them within kMaxInputElements, before anything is allocated (a
// crafted manifest must not overflow).
struct InputSizes {
  int64_t n, hidden, vocab, heads, q_tiles, k_tiles;
};

InputSizes bounded_sizes(const ExportManifest& manifest, const fs::path& manifest_path) {
  const auto bound = [&](int64_t v, const char* field, int64_t limit) {
    return bounded(manifest_path, v, field, limit);
  };
  const InputSizes s{bound(manifest.cache_size, "cache_size", int64_t{1} << 20),
                     bound(manifest.dims.hidden, "dims.hidden", kMaxDim),
                     bound(manifest.dims.vocab, "dims.vocab", kMaxDim),
                     bound(manifest.dims.heads, "dims.heads", 4096),
                     bound(manifest.pe_q_tiles, "pe_tiles.q", 4096),
                     bound(manifest.pe_k_tiles, "pe_tiles.k", 4096)};
  // The largest tensors: the mask [N, heads*N] and the embeddings [N, hidden].
  constexpr int64_t kMaxElements = kMaxInputElements;
  const std::string mask_name(sdk::runtime_input(sdk::InputRole::attention_mask).name);
  const std::string embeds_name(sdk::runtime_input(sdk::InputRole::embeddings).name);
  const int64_t n = s.n;
  for (const auto& [what, a, b, c] :
       {std::tuple{mask_name, n, s.heads, n}, std::tuple{embeds_name, n, s.hidden, int64_t{1}}})
    if (a > kMaxElements / b / c)
      throw BadInput(manifest_path.string() + ": " + what + " would need " + std::to_string(a) + " x " +
                     std::to_string(b) + " x " + std::to_string(c) + " values, more than the limit of " +
                     std::to_string(kMaxElements) + " (the largest cache whose inputs fit is " +
                     std::to_string(largest_calibration_cache(
                         {n, s.hidden, s.heads, manifest.theta_length, s.q_tiles, s.k_tiles})) +
                     ": export again with --cache at most that)");
  return s;
}

// The prompt must fit one window of the base graph and use the vocabulary.
void check_prompt(const std::vector<int64_t>& tokens, int64_t n, int64_t vocab) {
  const int64_t count = static_cast<int64_t>(tokens.size());
  if (count == 0) throw UsageError("--tokens: the prompt is empty");
  if (count > n)
    throw UsageError(
        "--tokens: " + std::to_string(count) + " tokens exceed the cache size " + std::to_string(n) +
        " of this export (the runtime would split the prompt into chunks; the base graph holds one window)");
  for (int64_t t : tokens)
    if (t < 0 || t >= vocab)
      throw UsageError("--tokens: id " + std::to_string(t) + " is outside the vocabulary (0.." +
                       std::to_string(vocab - 1) + ")");
}

// resources/theta.npy. theta_length is the manifest's word for the RoPE
// table's length (the pe inputs' width); checked like every other dimension,
// then against the file, before the file is read.
std::vector<float> read_theta(const fs::path& dir, const fs::path& manifest_path, const ExportManifest& manifest,
                              const InputSizes& s) {
  const int64_t theta_length = bounded(manifest_path, manifest.theta_length, "theta_length", kMaxDim);
  const fs::path theta_path = dir / "resources" / "theta.npy";
  NpyReader theta_file(theta_path);
  int64_t theta_values = 1;
  for (int64_t d : theta_file.shape())
    theta_values = d > kMaxDim ? kMaxDim + 1 : std::min(theta_values * d, kMaxDim + 1);
  if (theta_values != theta_length)
    throw BadInput(theta_path.string() + ": holds " +
                   (theta_values > kMaxDim ? "more than " + std::to_string(kMaxDim) : std::to_string(theta_values)) +
                   " values, but " + manifest_path.string() + " field 'theta_length' says " +
                   std::to_string(theta_length));
  std::vector<float> theta = theta_file.read_all();
  const int64_t t = static_cast<int64_t>(theta.size());
  if (t < 2 || t % 2)
    throw BadInput(theta_path.string() + ": " + std::to_string(t) +
                   " values; the runtime needs an even, non-zero length");
  if (s.n * t > kMaxInputElements / std::max(s.q_tiles, s.k_tiles))
    throw BadInput(manifest_path.string() + ": pe tables of " + std::to_string(s.n) + " x " + std::to_string(t) +
                   " x " + std::to_string(std::max(s.q_tiles, s.k_tiles)) + " values exceed the limit of " +
                   std::to_string(kMaxInputElements));
  return theta;
}

// The prompt's embeddings in the last `tokens.size()` rows of [N, hidden]; the
// padding rows before them stay zero.
std::vector<float> prompt_embeddings(NpyReader& embed_file, const std::vector<int64_t>& tokens, int64_t n,
                                     int64_t hidden) {
  const int64_t count = static_cast<int64_t>(tokens.size());
  const int64_t first_real = n - count;
  std::vector<float> embeds(static_cast<size_t>(n * hidden), 0.0f);
  for (int64_t i = 0; i < count; ++i)
    embed_file.read_rows(tokens[static_cast<size_t>(i)], tokens[static_cast<size_t>(i)] + 1,
                         std::span<float>(embeds.data() + (first_real + i) * hidden, static_cast<size_t>(hidden)));
  return embeds;
}

// Causal mask over the real positions, head-major: column = head * N + key.
std::vector<float> prompt_mask(int64_t n, int64_t heads, int64_t first_real) {
  std::vector<float> mask(static_cast<size_t>(n * heads * n), sdk::kMaskAllowed);
  for (int64_t r = first_real; r < n; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = 0; c < n; ++c) {
        const bool allowed = c >= first_real && c <= r;
        mask[static_cast<size_t>(r * heads * n + h * n + c)] = allowed ? sdk::kMaskAllowed : sdk::kMaskBlocked;
      }
  return mask;
}

// One pe table, `tiles` copies of T columns per row.
std::vector<float> pe_table(const std::vector<float>& theta, const std::vector<int64_t>& positions, bool cosine,
                            int64_t tiles) {
  const int64_t n = static_cast<int64_t>(positions.size());
  const int64_t t = static_cast<int64_t>(theta.size());
  const int64_t width = t * tiles;
  std::vector<float> out(static_cast<size_t>(n * width));
  std::vector<float> c(static_cast<size_t>(t)), s(static_cast<size_t>(t));
  for (int64_t r = 0; r < n; ++r) {
    sdk::runtime_pe_row(theta, positions[static_cast<size_t>(r)], c, s);
    const std::vector<float>& src = cosine ? c : s;
    for (int64_t k = 0; k < tiles; ++k) std::copy(src.begin(), src.end(), out.begin() + r * width + k * t);
  }
  return out;
}

}  // namespace

std::vector<NpzMember> runtime_inputs(const fs::path& dir, const std::vector<int64_t>& tokens, InputLayout layout) {
  const fs::path manifest_path = dir / "manifest.json";
  const ExportManifest manifest = read_manifest(manifest_path);
  const InputSizes s = bounded_sizes(manifest, manifest_path);
  const int64_t n = s.n, hidden = s.hidden, vocab = s.vocab;
  check_prompt(tokens, n, vocab);
  const std::vector<float> theta = read_theta(dir, manifest_path, manifest, s);
  const int64_t t = static_cast<int64_t>(theta.size());
  NpyReader embed_file(dir / "resources" / "embeddings.npy");
  if (embed_file.shape() != std::vector<int64_t>{vocab, hidden})
    throw BadInput((dir / "resources" / "embeddings.npy").string() + ": shape does not match the manifest's [" +
                   std::to_string(vocab) + ", " + std::to_string(hidden) + "]");

  const int64_t count = static_cast<int64_t>(tokens.size());
  const int64_t first_real = n - count;
  std::vector<int64_t> positions(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < count; ++i) positions[static_cast<size_t>(first_real + i)] = i;
  const std::vector<float> embeds = prompt_embeddings(embed_file, tokens, n, hidden);
  const std::vector<float> mask = prompt_mask(n, s.heads, first_real);

  const sdk::RuntimeSizes sizes{n, hidden, s.heads, t, s.q_tiles, s.k_tiles};
  std::vector<NpzMember> members;
  for (const sdk::RuntimeInput& input : sdk::kRuntimeInputs) {
    const std::vector<int64_t> shape =
        layout == InputLayout::device ? sdk::device_shape(input, sizes) : sdk::graph_shape(input, sizes);
    const std::string name(input.name);
    switch (input.shape) {
      case sdk::InputShape::embeddings: members.push_back(npz_f32(name, shape, embeds)); break;
      case sdk::InputShape::mask: members.push_back(npz_f32(name, shape, mask)); break;
      case sdk::InputShape::pe_table:
        members.push_back(npz_f32(name, shape, pe_table(theta, positions, input.cosine, shape.back() / t)));
        break;
    }
  }
  members.push_back(npz_i64("positions", {n}, positions));
  return members;
}

}  // namespace llm2hef::core
