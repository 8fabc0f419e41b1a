// A Hugging Face checkpoint folder as an sdk::Checkpoint.
//
// Reads config.json (required), generation_config.json, tokenizer_config.json
// and tokenizer.json (optional), and the weights from model.safetensors or
// from the shards named by model.safetensors.index.json. Every file is
// validated when the folder is opened, so a broken checkpoint fails before
// anything is written.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "llm2hef/sdk/checkpoint.hpp"

namespace llm2hef::core {

// What to do with weights that hold NaN or +-Inf. A checkpoint saved after a
// diverged fine-tune exports fine and yields garbage on the chip, so every
// value read is checked (the check costs a compare per value).
enum class NonFinitePolicy { record, refuse };

// A tensor in which a read met a NaN or an infinity: the first such value.
struct NonFiniteWeight {
  std::string tensor, file;
  std::vector<int64_t> index;  // row, then column for matrices
  float value = 0;
};

// The first non-finite value of each tensor met by reads of a checkpoint, or
// a refusal at the first one: what every checkpoint kind does with the index
// its reader reports. Safe to use from several threads at once (export
// converts a tensor's rows on several): the first value kept for a tensor is
// the one with the lowest index, whichever thread met it first.
class NonFiniteLog {
 public:
  explicit NonFiniteLog(NonFinitePolicy policy) : policy_(policy) {}
  // `bad`: the index in the rows [row_begin, ...) read of `info` of a
  // non-finite `value`. Throws BadInput naming the file, tensor and position
  // under NonFinitePolicy::refuse.
  void record(const sdk::TensorInfo& info, int64_t row_begin, size_t bad, float value) const;
  std::vector<NonFiniteWeight> all() const;  // in tensor-name order

 private:
  NonFinitePolicy policy_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, NonFiniteWeight, std::less<>> first_;
};

// Throws BadInput naming the folder or the offending file (and tensor). With
// NonFinitePolicy::refuse, reading a non-finite weight throws BadInput.
std::unique_ptr<sdk::Checkpoint> open_checkpoint(const std::filesystem::path& dir,
                                                 NonFinitePolicy nonfinite = NonFinitePolicy::record);

// The model's name for reports and the DFC network name: a GGUF's own name
// (its metadata, not the file name, which carries the quantization), the
// folder's name, or, for a Hugging Face cache snapshot
// (models--ORG--NAME/snapshots/HASH), the repository's NAME rather than the
// commit hash.
std::string checkpoint_model_name(const sdk::Checkpoint& ckpt, const std::filesystem::path& dir);

// The checkpoint's parameters: every tensor's elements. Each count is bounded
// by its bytes in the file; a sum past 2^63 is refused (BadInput), never wrapped.
int64_t checkpoint_parameters(const sdk::Checkpoint& ckpt);

// The tensors found holding non-finite values in what was read so far, in
// name order (empty for a checkpoint not opened by open_checkpoint).
std::vector<NonFiniteWeight> nonfinite_weights(const sdk::Checkpoint& ckpt);

}  // namespace llm2hef::core
