// GGUF tensor names back to HF names by the rules of the architecture's
// row (gguf/<family>.cpp), and the lookups over the rows (family.hpp).
#include "llm2hef/core/checkpoint/gguf_names.hpp"

#include <algorithm>
#include <charconv>

#include "gguf/family.hpp"

namespace llm2hef::core {

namespace gguf {

const Family* find_family(std::string_view gguf_arch) {
  for (const auto& f : families())
    if (f.arch.gguf == gguf_arch) return &f;
  return nullptr;
}

const GgufArch& named_variant(const Family& family, const GgufMetadata& meta) {
  if (family.variants.empty()) return family.arch;
  std::string name = meta.find_string("general.name").value_or("");
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
  for (const auto& v : family.variants)
    if (name.find(v.name_contains) != std::string::npos) return v.arch;
  return family.arch;
}

std::string family_names(bool (*pick)(const Family&)) {
  std::vector<std::string> names;
  for (const auto& f : families())
    if (pick(f)) names.push_back(f.arch.gguf);
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return s;
}

std::vector<NameRule> llama_globals() {
  return {{"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}};
}

std::vector<NameRule> llama_blocks(GgufTransform qk) {
  return {{"attn_norm", "model.layers.{N}.input_layernorm"},
          {"attn_q", "model.layers.{N}.self_attn.q_proj", qk, qk},
          {"attn_k", "model.layers.{N}.self_attn.k_proj", qk, qk},
          {"attn_v", "model.layers.{N}.self_attn.v_proj"},
          {"attn_output", "model.layers.{N}.self_attn.o_proj"},
          {"attn_q_norm", "model.layers.{N}.self_attn.q_norm"},
          {"attn_k_norm", "model.layers.{N}.self_attn.k_norm"},
          {"ffn_norm", "model.layers.{N}.post_attention_layernorm"},
          {"ffn_gate", "model.layers.{N}.mlp.gate_proj"},
          {"ffn_up", "model.layers.{N}.mlp.up_proj"},
          {"ffn_down", "model.layers.{N}.mlp.down_proj"}};
}

}  // namespace gguf

namespace {

std::string replace_all(std::string s, std::string_view from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace

std::string gguf_supported_archs() {
  std::string s;
  for (const auto& f : gguf::families()) s += (s.empty() ? "" : ", ") + f.arch.gguf;
  return s;
}

const GgufArch* find_gguf_arch(std::string_view arch) {
  const gguf::Family* f = gguf::find_family(arch);
  return f ? &f->arch : nullptr;
}

std::optional<GgufNameMatch> map_gguf_tensor(const GgufArch& arch, std::string_view name) {
  const gguf::Family* family = gguf::find_family(arch.gguf);
  if (!family) return std::nullopt;
  std::string_view stem = name, suffix;
  if (name.ends_with(".weight"))
    stem = name.substr(0, name.size() - 7), suffix = "weight";
  else if (name.ends_with(".bias"))
    stem = name.substr(0, name.size() - 5), suffix = "bias";
  else
    return std::nullopt;

  const auto match = [&](const gguf::NameRule& r, int64_t block) -> GgufNameMatch {
    GgufNameMatch m;
    m.hf_name = replace_all(r.hf, "{N}", block < 0 ? "" : std::to_string(block)) + "." + std::string(suffix);
    m.transform = suffix == "weight" ? r.weight : r.bias;
    m.is_q = std::string_view(r.stem) == "attn_q";
    m.block = block;
    return m;
  };
  if (stem.starts_with("blk.")) {
    const std::string_view rest = stem.substr(4);
    const size_t dot = rest.find('.');
    if (dot == std::string_view::npos || dot == 0) return std::nullopt;
    unsigned block = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + dot, block);
    if (ec != std::errc() || end != rest.data() + dot || (dot > 1 && rest[0] == '0')) return std::nullopt;
    const std::string_view what = rest.substr(dot + 1);
    for (const auto& r : family->blocks)
      if (what == r.stem) return match(r, static_cast<int64_t>(block));
    return std::nullopt;
  }
  for (const auto& r : family->globals)
    if (stem == r.stem) return match(r, -1);
  return std::nullopt;
}

bool is_gguf_config_tensor(std::string_view name) {
  return name == "rope_freqs.weight" || name == "rope_factors_long.weight" || name == "rope_factors_short.weight";
}

}  // namespace llm2hef::core
