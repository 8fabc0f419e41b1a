// Gemma's SentencePiece vocabularies in GGUF files (core/src/checkpoint/gguf_gemma_vocab.cpp):
// what llama.cpp's converter changed in them, undone, and the tokenizer.json
// shape of Hugging Face's Gemma tokenizer. Used by gguf_tokenizer.cpp only.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace llm2hef::core::gguf_gemma {

// For a GGUF whose tokenizer.ggml.model is "llama" (SentencePiece): a copy of
// `metadata` with the vocabulary as the model's tokenizer.model had it when
// general.architecture's row says Vocabulary::gemma (gguf/gemma.cpp: gemma2,
// gemma3); nullopt for any other architecture. Throws BadInput, naming
// `origin` and the key, for another gemma* architecture (its vocabulary was
// never checked) and for a Gemma file
// whose tokenizer.ggml.add_space_prefix is true (not Gemma's tokenizer).
std::optional<nlohmann::ordered_json> restored_metadata(const nlohmann::ordered_json& metadata,
                                                        const std::string& origin);

// Gives a tokenizer.json written from restored_metadata's copy (as a
// SentencePiece BPE without prefix space) the shape of Hugging Face's
// GemmaTokenizer: its normalizer and pre-tokenizer, and the special flags of
// the tokens the converter typed CONTROL for their look alone.
void apply_tokenizer_shape(nlohmann::json& tokenizer);

}  // namespace llm2hef::core::gguf_gemma
