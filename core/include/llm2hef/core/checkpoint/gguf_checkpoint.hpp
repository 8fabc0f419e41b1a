// A GGUF file (or a split set, or a folder holding one) as a
// CheckpointReader, so that every adapter reads it as it reads a Hugging Face
// folder: HF tensor names and shapes (gguf_names.hpp), a config.json built
// from the metadata (gguf_config.hpp), both by the architecture's row
// (core/src/checkpoint/gguf/), rows dequantized to float32 on demand and
// streamed (memory stays near one block, as for safetensors). It reports its
// own reading notes (types dequantized, hyper-parameters assumed), model name
// and chat-template source through CheckpointReader.
//
// Tokenizer: a folder holding the .gguf and an HF tokenizer.json (and
// tokenizer_config.json) uses those files; otherwise they are built from the
// metadata (gguf_tokenizer.hpp), tokenizer.json into a private folder in
// $TMPDIR (io/temp_dir.hpp ScratchDir: removed with the checkpoint, on
// Ctrl-C or SIGTERM, or by a later run after a SIGKILL).
#pragma once

#include <filesystem>
#include <memory>

#include "llm2hef/core/checkpoint/checkpoint_reader.hpp"

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
std::unique_ptr<CheckpointReader> open_gguf_checkpoint(const std::filesystem::path& path, NonFinitePolicy nonfinite);

}  // namespace llm2hef::core
