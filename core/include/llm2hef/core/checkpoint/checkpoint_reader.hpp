// A checkpoint as core opened it (open_checkpoint): the sdk::Checkpoint the
// adapters read, plus what core reports about the reading. Each reader (a
// Hugging Face folder, a GGUF file) answers for itself, so that export and
// inspect ask the checkpoint instead of asking which kind it is.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
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

class CheckpointReader : public sdk::Checkpoint {
 public:
  // The tensors found holding non-finite values in what was read so far, in
  // name order.
  virtual std::vector<NonFiniteWeight> nonfinite_weights() const = 0;

  // What export and inspect tell the user about reading this checkpoint,
  // one line each (a GGUF's: the weight types dequantized, the
  // hyper-parameters assumed); none for a Hugging Face folder.
  virtual std::vector<std::string> reading_notes() const { return {}; }

  // The model's name as the checkpoint itself gives it (a GGUF's metadata or
  // file name, not its folder's); empty where only the folder names it
  // (checkpoint_model_name then does).
  virtual std::string own_model_name() const { return {}; }

  // How reports name the source of a chat template found in
  // tokenizer_config (`source`, as chosen_chat_template says it): `source`
  // itself, unless the reader built tokenizer_config or chose among files
  // (a GGUF's: from its metadata, or the folder's file beside it).
  virtual std::string tokenizer_config_source(const std::string& source) const { return source; }
};

}  // namespace llm2hef::core
