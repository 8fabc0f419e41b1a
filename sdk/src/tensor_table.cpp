#include "llm2hef/sdk/tensor_table.hpp"

#include <utility>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

const std::string& TensorTable::add(std::string name, std::vector<int64_t> shape) {
  rows_.push_back({std::move(name), std::move(shape)});
  return rows_.back().name;
}

void TensorTable::add_optional(std::string name, std::vector<int64_t> shape) {
  rows_.push_back({std::move(name), std::move(shape), TensorRow::Presence::optional});
}

void TensorTable::refuse(std::string name, std::string why) {
  rows_.push_back({std::move(name), {}, TensorRow::Presence::refused, std::move(why)});
}

void TensorTable::append(const TensorTable& other) {
  rows_.insert(rows_.end(), other.rows_.begin(), other.rows_.end());
}

void TensorTable::norm(const NormSpec& spec, int64_t width) {
  if (spec.weight.empty()) return;  // LayerNorm without elementwise affine
  add(spec.weight, {width});
  if (spec.bias && !spec.bias->empty()) add(*spec.bias, {width});
}

void TensorTable::linear(const LinearSpec& spec, int64_t out, int64_t in) {
  add(spec.weight, spec.layout == WeightLayout::out_in ? std::vector<int64_t>{out, in} : std::vector<int64_t>{in, out});
  if (spec.bias) add(*spec.bias, {out});
}

void TensorTable::attention(const AttentionBlockSpec& spec, const ModelDims& d, bool qkv_projections,
                            bool rms_qk_norm) {
  const int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim;
  const std::pair<const char*, int64_t> projections[] = {{"q_proj", q}, {"k_proj", kv}, {"v_proj", kv}};
  if (qkv_projections) {
    for (const auto& [name, rows] : projections) add(spec.prefix + name + ".weight", {rows, d.hidden});
    if (spec.qkv_bias)
      for (const auto& [name, rows] : projections) add(spec.prefix + name + ".bias", {rows});
  }
  add(spec.prefix + spec.out_proj + ".weight", {d.hidden, q});
  if (spec.out_bias) add(spec.prefix + spec.out_proj + ".bias", {d.hidden});
  if (!spec.q_norm.empty() && rms_qk_norm && !spec.q_norm_fn) {
    add(spec.prefix + spec.q_norm + ".weight", {spec.qk_norm_full_width ? q : d.head_dim});
    add(spec.prefix + spec.k_norm + ".weight", {spec.qk_norm_full_width ? kv : d.head_dim});
  }
}

void TensorTable::swiglu(const SwigluSpec& spec, int64_t hidden, int64_t intermediate) {
  if (spec.gate_weight == spec.up_weight) {
    add(spec.gate_weight, {2 * intermediate, hidden});  // one fused gate_up tensor (Phi-3)
  } else {
    add(spec.gate_weight, {intermediate, hidden});
    add(spec.up_weight, {intermediate, hidden});
  }
  add(spec.down_weight, {hidden, intermediate});
}

void TensorTable::gelu_mlp(const GeluMlpSpec& spec, int64_t hidden, int64_t intermediate) {
  linear(spec.up, intermediate, hidden);
  linear(spec.down, hidden, intermediate);
}

void TensorTable::check(const Checkpoint& ckpt) const {
  // Refused rows last, so that a shape that disagrees with config.json is
  // reported before a tensor of another family.
  std::vector<const TensorRow*> order;
  for (const TensorRow& row : rows_)
    if (row.presence != TensorRow::Presence::refused) order.push_back(&row);
  for (const TensorRow& row : rows_)
    if (row.presence == TensorRow::Presence::refused) order.push_back(&row);
  auto read_by_another_row = [&](const std::string& name) {
    for (const TensorRow& row : rows_)
      if (row.presence != TensorRow::Presence::refused && row.name == name) return true;
    return false;
  };
  for (const TensorRow* row : order) {
    switch (row->presence) {
      case TensorRow::Presence::required: ckpt.expect(row->name, row->shape); break;
      case TensorRow::Presence::optional:
        if (ckpt.has(row->name)) ckpt.expect(row->name, row->shape);
        break;
      case TensorRow::Presence::refused:
        if (ckpt.has(row->name) && !read_by_another_row(row->name))
          throw Unsupported(ckpt.info(row->name).file.string() + ": tensor '" + row->name +
                            "' is not read by this adapter" + row->refusal);
        break;
    }
  }
}

}  // namespace llm2hef::sdk
