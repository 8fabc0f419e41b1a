// libFuzzer target for the precision plan reader (quantization.json from
// `llm2hef calibrate`, read by `har lines --plan` and `inspect --plan`):
// parse_precision_plan on the input, then, for a plan it accepts, its byte
// counts added to an estimate and its mapping onto a small HN held here (one
// layer of each type a plan may or may not reach), with the names of every
// mapped layer written as a model script would hold them. Any input must be
// refused with BadInput or give a plan within the documented limits whose
// mapped layers all take their mode. Anything else (another exception, a
// sanitizer report, a trap) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "llm2hef/core/har/hn_model.hpp"
#include "llm2hef/core/har/precision_plan.hpp"
#include "llm2hef/core/har/script_names.hpp"
#include "llm2hef/sdk/errors.hpp"

using namespace llm2hef;
using namespace llm2hef::core::har;

namespace {

// A layer of each type, each listing the ONNX node the seeds and the
// dictionary name; the scores matmul lists two, as the DFC folds them.
constexpr std::string_view kHn = R"({"name": "f", "layers": {
  "f/input_layer1": {"type": "input_layer", "input": [], "output": ["f/conv1"], "original_names": ["inputs_embeds"]},
  "f/input_layer2": {"type": "input_layer", "input": [], "output": ["f/ew_add2"], "original_names": ["attention_mask"]},
  "f/conv1": {"type": "conv", "input": ["f/input_layer1"], "output": ["f/matmul1", "f/ew_add1"],
              "original_names": ["/model/layers.0/attn/q_proj/MatMul"]},
  "f/matmul1": {"type": "matmul", "input": ["f/conv1"], "output": ["f/ew_add2"],
                "original_names": ["/model/layers.0/attn/qk/MatMul", "/model/layers.0/attn/qk/Div"]},
  "f/ew_add2": {"type": "ew_add", "input": ["f/matmul1", "f/input_layer2"], "output": ["f/softmax1"],
                "original_names": ["/model/layers.0/attn/mask/Add"]},
  "f/softmax1": {"type": "softmax", "input": ["f/ew_add2"], "output": ["f/conv2"],
                 "original_names": ["/model/layers.0/attn/Softmax"]},
  "f/conv2": {"type": "conv", "input": ["f/softmax1"], "output": ["f/ew_add1"],
              "original_names": ["/model/layers.0/attn/o_proj/MatMul"]},
  "f/ew_add1": {"type": "ew_add", "input": ["f/conv1", "f/conv2"], "output": ["f/normalization1"],
                "original_names": ["/model/layers.0/attn_residual/Add"]},
  "f/normalization1": {"type": "normalization", "input": ["f/ew_add1"], "output": ["f/output_layer1"],
                       "original_names": ["/model/norm/Mul_1"]},
  "f/output_layer1": {"type": "output_layer", "input": ["f/normalization1"], "output": [],
                      "original_names": ["logits"]}}})";

const HnModel& hn() {
  static const HnModel model = HnModel::parse(kHn, "fuzz.hn");
  return model;
}

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  PrecisionPlan plan;
  try {
    plan = parse_precision_plan({reinterpret_cast<const char*>(data), size}, "fuzz.json");
  } catch (const BadInput&) {
    return 0;
  }
  check(size <= kMaxPlanBytes);
  for (const auto& e : plan.entries) {
    check(!e.onnx_node.empty() && e.onnx_node.size() <= kMaxPlanNameBytes && e.extra_bytes >= 0);
  }
  if (plan.cost) {
    const PlanCost& c = *plan.cost;
    check(c.extra_weight_bytes >= 0 && c.extra_activation_bytes >= 0 && c.default_weight_bytes >= 0);
    check(c.extra_bytes == c.extra_weight_bytes + c.extra_activation_bytes);
  }
  for (const int64_t base : {int64_t{0}, int64_t{1} << 33, INT64_MAX}) {
    try {
      const int64_t total = bytes_with_plan(base, plan);
      check(total >= base);
    } catch (const BadInput&) {
      check(plan.cost && plan.cost->extra_bytes > INT64_MAX - base);
    }
  }
  try {
    for (const auto& m : map_plan_to_layers(plan, hn())) {
      check(!m.layers.empty());
      for (const auto& layer : m.layers)
        check(mode_applies_to(m.entry->precision_mode, hn().type(layer), layer) && is_script_name(layer));
      (void)script_name_list(hn(), m.layers);
    }
  } catch (const BadInput&) {
  }
  return 0;
}
