#include "llm2hef/core/host_inputs.hpp"

#include <algorithm>
#include <tuple>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;

std::vector<NpzMember> runtime_inputs(const fs::path& dir, const std::vector<int64_t>& tokens, InputLayout layout) {
  const sdk::JsonFile manifest = sdk::JsonFile::load(dir / "manifest.json");
  const nlohmann::json& m = manifest.raw();
  if (!m.contains("dims") || !m.contains("pe_tiles"))
    throw BadInput(manifest.origin() + ": not an llm2hef export manifest (no 'dims' / 'pe_tiles')");
  // Every size below is computed from these numbers: each must be a sane
  // positive integer, and each tensor built from them must fit in memory,
  // before anything is allocated (a crafted manifest must not overflow).
  auto dim = [&](const nlohmann::json& parent, const char* group, const char* key, int64_t limit) {
    const std::string field = std::string(group) + "." + key;
    if (!parent.is_object() || !parent.contains(key) || !parent.at(key).is_number_integer())
      throw BadInput(manifest.where(field) + ": required integer missing");
    const int64_t v = parent.at(key).get<int64_t>();
    if (v < 1 || v > limit)
      throw BadInput(manifest.where(field) + ": " + std::to_string(v) + " is outside 1.." + std::to_string(limit));
    return v;
  };
  constexpr int64_t kMaxDim = int64_t{1} << 24;
  const int64_t n = manifest.get_int("cache_size");
  if (n < 1 || n > (int64_t{1} << 20))
    throw BadInput(manifest.where("cache_size") + ": " + std::to_string(n) + " is outside 1.." + std::to_string(int64_t{1} << 20));
  const int64_t hidden = dim(m["dims"], "dims", "hidden", kMaxDim);
  const int64_t vocab = dim(m["dims"], "dims", "vocab", kMaxDim);
  const int64_t heads = dim(m["dims"], "dims", "heads", 4096);
  const int64_t q_tiles = dim(m["pe_tiles"], "pe_tiles", "q", 4096);
  const int64_t k_tiles = dim(m["pe_tiles"], "pe_tiles", "k", 4096);
  // The largest tensors: the mask [N, heads*N] and the embeddings [N, hidden].
  constexpr int64_t kMaxElements = int64_t{1} << 31;  // 8 GiB of float32
  for (const auto& [what, a, b, c] : {std::tuple{"attention_mask", n, heads, n}, std::tuple{"inputs_embeds", n, hidden, int64_t{1}}})
    if (a > kMaxElements / b / c)
      throw BadInput(manifest.origin() + ": " + what + " would need " + std::to_string(a) + " x " + std::to_string(b) +
                     " x " + std::to_string(c) + " values, more than the limit of " + std::to_string(kMaxElements));

  const int64_t count = static_cast<int64_t>(tokens.size());
  if (count == 0) throw UsageError("--tokens: the prompt is empty");
  if (count > n)
    throw UsageError("--tokens: " + std::to_string(count) + " tokens exceed the cache size " + std::to_string(n) +
                     " of this export (the runtime would split the prompt into chunks; the base graph holds one window)");
  for (int64_t t : tokens)
    if (t < 0 || t >= vocab)
      throw UsageError("--tokens: id " + std::to_string(t) + " is outside the vocabulary (0.." +
                       std::to_string(vocab - 1) + ")");

  NpyReader theta_file(dir / "resources" / "theta.npy");
  const std::vector<float> theta = theta_file.read_all();
  const int64_t t = static_cast<int64_t>(theta.size());
  if (t < 2 || t % 2 || t > kMaxDim)
    throw BadInput((dir / "resources" / "theta.npy").string() + ": " + std::to_string(t) +
                   " values; the runtime needs an even, non-zero length");
  if (n * t > kMaxElements / std::max(q_tiles, k_tiles))
    throw BadInput(manifest.origin() + ": pe tables of " + std::to_string(n) + " x " + std::to_string(t) + " x " +
                   std::to_string(std::max(q_tiles, k_tiles)) + " values exceed the limit of " + std::to_string(kMaxElements));
  NpyReader embed_file(dir / "resources" / "embeddings.npy");
  if (embed_file.shape() != std::vector<int64_t>{vocab, hidden})
    throw BadInput((dir / "resources" / "embeddings.npy").string() + ": shape does not match the manifest's [" +
                   std::to_string(vocab) + ", " + std::to_string(hidden) + "]");

  const int64_t first_real = n - count;
  std::vector<int64_t> positions(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < count; ++i) positions[static_cast<size_t>(first_real + i)] = i;

  std::vector<float> embeds(static_cast<size_t>(n * hidden), 0.0f);
  for (int64_t i = 0; i < count; ++i)
    embed_file.read_rows(tokens[static_cast<size_t>(i)], tokens[static_cast<size_t>(i)] + 1,
                         std::span<float>(embeds.data() + (first_real + i) * hidden, static_cast<size_t>(hidden)));

  // Mask, head-major: column = head * N + key.
  std::vector<float> mask(static_cast<size_t>(n * heads * n), sdk::kMaskAllowed);
  for (int64_t r = first_real; r < n; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = 0; c < n; ++c) {
        const bool allowed = c >= first_real && c <= r;
        mask[static_cast<size_t>(r * heads * n + h * n + c)] = allowed ? sdk::kMaskAllowed : sdk::kMaskBlocked;
      }

  auto table = [&](bool cosine, int64_t tiles) {
    const int64_t width = layout == InputLayout::device ? t * tiles : t;
    std::vector<float> out(static_cast<size_t>(n * width));
    std::vector<float> c(static_cast<size_t>(t)), s(static_cast<size_t>(t));
    for (int64_t r = 0; r < n; ++r) {
      sdk::runtime_pe_row(theta, positions[static_cast<size_t>(r)], c, s);
      const std::vector<float>& src = cosine ? c : s;
      for (int64_t k = 0; k < width / t; ++k) std::copy(src.begin(), src.end(), out.begin() + r * width + k * t);
    }
    return std::make_pair(width, out);
  };

  std::vector<NpzMember> members;
  members.push_back(npz_f32("inputs_embeds", {1, n, hidden}, embeds));
  members.push_back(npz_f32("attention_mask", {1, 1, n, heads * n}, mask));
  for (const auto& [name, cosine, tiles] : {std::tuple{"pe_q_cos", true, q_tiles}, std::tuple{"pe_q_sin", false, q_tiles},
                                            std::tuple{"pe_k_cos", true, k_tiles}, std::tuple{"pe_k_sin", false, k_tiles}}) {
    auto [width, values] = table(cosine, tiles);
    members.push_back(npz_f32(name, {1, n, width}, values));
  }
  members.push_back(npz_i64("positions", {n}, positions));
  return members;
}

}  // namespace llm2hef::core
