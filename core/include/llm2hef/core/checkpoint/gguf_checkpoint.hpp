// A GGUF file (or a split set, or a folder holding one) as an
// sdk::Checkpoint, so that every adapter reads it as it reads a Hugging Face
// folder: HF tensor names and shapes (gguf_names.hpp), a config.json built
// from the metadata (gguf_config.hpp), rows dequantized to float32 on
// demand and streamed (memory stays near one block, as for safetensors).
//
// Tokenizer: a folder holding the .gguf and an HF tokenizer.json (and
// tokenizer_config.json) uses those files; otherwise they are built from the
// metadata (gguf_tokenizer.hpp), tokenizer.json into a private folder in
// $TMPDIR (io/temp_dir.hpp ScratchDir: removed with the checkpoint, on
// Ctrl-C or SIGTERM, or by a later run after a SIGKILL).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "llm2hef/core/checkpoint/checkpoint_dir.hpp"
#include "llm2hef/sdk/checkpoint.hpp"

namespace llm2hef::core {

// True when `path` names a GGUF checkpoint: a file (ending in .gguf or
// starting with the GGUF magic), or a folder without config.json that holds
// .gguf files.
bool is_gguf_checkpoint(const std::filesystem::path& path);

// Throws BadInput naming the file and the key or tensor for malformed input
// (a tensor of a block past block_count among them), Unsupported for a valid
// file llm2hef cannot convert (a tensor without a HF counterpart in its
// architecture's table, or of a type it does not dequantize: checked here,
// on opening, so that inspect and export refuse the same files).
std::unique_ptr<sdk::Checkpoint> open_gguf_checkpoint(const std::filesystem::path& path, NonFinitePolicy nonfinite);

// Non-finite values met so far, when `ckpt` is a GGUF checkpoint; empty otherwise.
std::vector<NonFiniteWeight> gguf_nonfinite_weights(const sdk::Checkpoint& ckpt);

// What `export` and `inspect` should tell the user about a GGUF checkpoint
// (empty for any other): the weight types dequantized, the hyper-parameters
// assumed, and the second rounding when the weights were quantized.
std::vector<std::string> gguf_notes(const sdk::Checkpoint& ckpt);

// Where a GGUF checkpoint's tokenizer_config (so its chat_template) was
// read: the folder's tokenizer_config.json or the GGUF metadata; empty for
// any other checkpoint, or when there is none.
std::string gguf_tokenizer_config_origin(const sdk::Checkpoint& ckpt);

// The model name of a GGUF checkpoint: from its metadata (general.basename
// with general.size_label and general.finetune, else general.name), else the
// file's stem without a split suffix ("-00001-of-00003"); empty for any other
// checkpoint, and for a folder whose GGUF names no model.
std::string gguf_model_name(const sdk::Checkpoint& ckpt);

}  // namespace llm2hef::core
