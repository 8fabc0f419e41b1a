// One row per GGUF architecture: what llm2hef knows about reading a file of
// that llama.cpp architecture as a Hugging Face checkpoint.
//
// Each family's rows live in a file of this folder (gguf/llama.cpp,
// gguf/gemma.cpp, ...) defining `std::vector<Family> rows_<file stem>()`.
// core/CMakeLists.txt finds those files and generates the table families()
// returns (from gguf_families.cpp.in), so adding an architecture is adding its
// file: no list to edit. The machinery the rows share stays where it was:
// name mapping (gguf_names.cpp), the common config.json keys
// (gguf_config.cpp, config_builder.hpp), the tensor transforms
// (gguf_checkpoint.cpp), the tokenizer writer (gguf_tokenizer.cpp) and
// Gemma's vocabulary repair (gguf_gemma_vocab.cpp). docs/gguf.md says what a
// row holds.
#pragma once

#include <string_view>
#include <vector>

#include "llm2hef/core/checkpoint/gguf_config.hpp"
#include "llm2hef/core/checkpoint/gguf_names.hpp"

namespace llm2hef::core::gguf {

// One GGUF tensor stem and the HF module it came from: the inverse of
// llama.cpp gguf-py tensor_mapping.py for the family's HF spelling, with
// what the converter did to the data (conversion/<family>.py
// modify_tensors), undone by the transform.
struct NameRule {
  const char* stem;                            // "attn_q" (blk.N.attn_q) or "token_embd"
  const char* hf;                              // HF module, "{N}" for the block index
  GgufTransform weight = GgufTransform::none;  // applied to <stem>.weight
  GgufTransform bias = GgufTransform::none;    // applied to <stem>.bias
};

// A file of the row's architecture that is another HF model, told apart by
// general.name, as transformers' GGUF loader tells them apart
// (modeling_gguf_pytorch_utils.py): llama.cpp writes Mistral as llama.
struct NamedVariant {
  const char* name_contains;  // lower case; general.name is lowered before the search
  GgufArch arch;              // same `gguf` as the row: the row's names and config apply
};

// What <arch>.rope.dimension_count may say.
enum class Rope {
  whole_head,  // the transformers family turns all of head_dim: a smaller count is refused
  partial,     // its config has a partial-rotary key, written from the count
  none,        // no RoPE (GPT-2): the key means nothing
};

// How the SentencePiece vocabulary of tokenizer.ggml.* is read.
enum class Vocabulary {
  as_stored,
  gemma,  // what the converter changed in Gemma's vocabulary undone (gguf_gemma_vocab.hpp)
};

class ConfigBuilder;

// Written with designated initializers (.arch = ..., .config = ...); every
// member has a default, so a row names only what it has.
struct Family {
  GgufArch arch{};                           // general.architecture, and the config.json it becomes
  std::vector<NameRule> globals{};           // tensors outside the blocks
  std::vector<NameRule> blocks{};            // blk.N.<stem>
  void (*config)(ConfigBuilder&) = nullptr;  // the family's config.json keys, after the common ones
  Rope rope = Rope::whole_head;
  std::vector<NamedVariant> variants{};
  Vocabulary vocabulary = Vocabulary::as_stored;
};

// Every row, in the order of their files' names (generated: gguf_families.cpp.in).
const std::vector<Family>& families();
// nullptr when no row has this general.architecture.
const Family* find_family(std::string_view gguf_arch);
// The row's architecture, or the variant `meta`'s general.name names. Reads
// general.name only for a row with variants.
const GgufArch& named_variant(const Family& family, const GgufMetadata& meta);
// "a, b and c" of the rows for which `pick` is true, for messages.
std::string family_names(bool (*pick)(const Family&));

// The Llama family's module names (LlamaForCausalLM and the families that
// copy them); `qk` is what was done to q_proj and k_proj.
std::vector<NameRule> llama_globals();
std::vector<NameRule> llama_blocks(GgufTransform qk);

}  // namespace llm2hef::core::gguf
