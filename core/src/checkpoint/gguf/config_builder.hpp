// The config.json builder a row's `config` step writes into
// (gguf_config.cpp): the keys every family shares are written first
// (common()), then the row's own. Keys: gguf-py constants.py (Keys.LLM,
// Keys.Attention, Keys.Rope, Keys.ShortConv); what each family's converter
// writes: conversion/<family>.py set_gguf_parameters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "family.hpp"

namespace llm2hef::core::gguf {

// GGUF stores most hyper-parameters as float32; written back as the shortest
// decimal that reads as the same float32 (1e-06, not 9.99999997e-07), which
// is what the HF config held before the conversion rounded it.
double f32_decimal(double v);
// Numbers in messages as a user would write them (0.5, -1.0, nan, inf).
std::string number_text(double v);

class ConfigBuilder {
 public:
  ConfigBuilder(const GgufMetadata& meta, const Family& family, const GgufArch& arch, const GgufTensorAccess& tensors)
      : meta(meta), family(family), arch(arch), tensors(tensors) {}

  const GgufMetadata& meta;
  const Family& family;
  const GgufArch& arch;  // the row's, or the variant's (NamedVariant)
  const GgufTensorAccess& tensors;
  GgufConfig out;
  nlohmann::json& c = out.config;
  int64_t rotary = 0;  // dimensions of each head RoPE turns (set by common())

  // "<arch>.<k>"
  std::string key(const char* k) const { return arch.gguf + "." + k; }
  // A float metadata value as f32_decimal writes it.
  std::optional<double> number(const char* k) const;
  bool has_tensor(const std::string& name) const { return tensors.find(name) != nullptr; }
  bool any_block_has(const std::string& stem, int64_t layers) const;
  // A hyper-parameter assumed (not in the file), for export and inspect to say.
  void note(std::string s) { out.notes.push_back(std::move(s)); }
  int64_t head_dim() const;
  // A per-frequency RoPE factor tensor, every value checked positive and finite.
  std::vector<float> rope_factors(const char* name) const;

  // The keys every family has, from the metadata and the tensors.
  void common();
  // The Llama family's activation and bias flags. Qwen2's config has no
  // attention_bias (its attention always has q/k/v biases and never an
  // o_proj one): `attention_bias` false leaves the key out.
  void llama_family(bool attention_bias = true);

 private:
  int64_t vocab_size() const;
  void value_length() const;
  void dense_only() const;
  void rotary_dims();
  void rope(int64_t default_head_dim);
  void llama3_rope(double theta, int64_t default_head_dim, nlohmann::json& scaling);
};

}  // namespace llm2hef::core::gguf
