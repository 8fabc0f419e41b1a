// The tensor table of a decoder description (decoder_model.hpp): every
// checkpoint tensor the model reads, with the shape config.json implies, and
// the tensors it must not find. The rows a spec reads are derived from the
// spec itself, so a member that edits a spec edits its rows too; the whole
// table is checked against the checkpoint in one loop before anything is
// built.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/attention_block.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/decoder.hpp"

namespace llm2hef::sdk {

// One checkpoint tensor the model reads, with the shape config.json implies.
struct TensorRow {
  enum class Presence {
    required,  // must exist with this shape
    optional,  // checked when present (an untied lm_head.weight)
    refused,   // must not exist: another family's tensor this model would silently drop
  };
  std::string name;
  std::vector<int64_t> shape;
  Presence presence = Presence::required;
  std::string refusal = {};  // for refused rows: what the message adds after "is not read by this adapter"
};

class TensorTable {
 public:
  // A row; returns the name so that a spec can be written from it.
  const std::string& add(std::string name, std::vector<int64_t> shape);
  void add_optional(std::string name, std::vector<int64_t> shape);
  void refuse(std::string name, std::string why);
  // Every row of `other`, in its order.
  void append(const TensorTable& other);

  // The rows a spec reads, derived from the spec itself.
  void norm(const NormSpec& spec, int64_t width);  // weight (and bias); none for a LayerNorm without affine
  void linear(const LinearSpec& spec, int64_t out, int64_t in);  // weight in its layout, bias [out]
  // q/k/v projections (biases as the spec says; none for a fused tensor the
  // description declares), the output projection and the per-head or
  // full-width RMS QK-Norm (rms_qk_norm false: another QK-Norm declares its own rows).
  void attention(const AttentionBlockSpec& spec, const ModelDims& dims, bool qkv_projections = true,
                 bool rms_qk_norm = true);
  void swiglu(const SwigluSpec& spec, int64_t hidden, int64_t intermediate);
  void gelu_mlp(const GeluMlpSpec& spec, int64_t hidden, int64_t intermediate);

  const std::vector<TensorRow>& rows() const { return rows_; }

  // Every row against the checkpoint, in one loop in declaration order:
  // required rows must exist with their shape, optional ones when present;
  // a refused row must be absent unless another row reads it (Unsupported
  // naming the file and the tensor).
  void check(const Checkpoint& ckpt) const;

 private:
  std::vector<TensorRow> rows_;
};

}  // namespace llm2hef::sdk
