// hailo-contract.md section 5.4: after set_kv_cache_global_params
// duplicates the scopes, a multi-input conv can list its `input` in another
// order than its `input_shapes` (fatal when the widths differ, e.g. 4864 vs
// 896). The inputs are reordered to match the declared widths; only `input`
// changes, and only when every input finds its width.
#include "fixup_common.hpp"

namespace llm2hef::core::har {

namespace {

// The width a producer hands to `consumer`: its output shape for that edge
// when it lists one shape per consumer, else its first.
int64_t width_towards(const HnModel& hn, const std::string& producer, const std::string& consumer) {
  const auto shapes = hn.output_shapes(producer);
  const auto outs = hn.outputs(producer);
  if (shapes.empty() || shapes[0].empty())
    throw BadInput(hn.label() + ": layer '" + producer + "' has no output_shapes");
  if (shapes.size() == outs.size())
    for (size_t i = 0; i < outs.size(); ++i)
      if (outs[i] == consumer && !shapes[i].empty()) return shapes[i].back();
  return shapes[0].back();
}

}  // namespace

FixupResult conv_input_order(FixupInput& in) {
  FixupResult r{{}, true, "", {}, {}};  // named by the table in har_fix.cpp
  HnModel& hn = in.hn;
  size_t checked = 0;
  std::vector<std::string> unmatched;
  for (const auto& conv : hn.layers_of_type("conv")) {
    const auto inputs = hn.inputs(conv);
    if (inputs.size() < 2) continue;
    ++checked;
    const auto declared = hn.input_shapes(conv);
    if (declared.size() != inputs.size()) {
      unmatched.push_back(conv + " (" + std::to_string(inputs.size()) + " inputs, " + std::to_string(declared.size()) +
                          " input_shapes)");
      continue;
    }
    std::vector<int64_t> wanted, actual;
    for (const auto& s : declared) wanted.push_back(s.empty() ? -1 : s.back());
    for (const auto& p : inputs) actual.push_back(width_towards(hn, p, conv));
    if (wanted == actual) continue;
    // Greedy: the first unused producer of each wanted width.
    std::vector<bool> used(inputs.size(), false);
    std::vector<std::string> order;
    for (int64_t w : wanted) {
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (!used[i] && actual[i] == w) {
          used[i] = true;
          order.push_back(inputs[i]);
          break;
        }
      }
    }
    if (order.size() != inputs.size()) {
      unmatched.push_back(conv + " (widths [" + join_ints(actual) + "] cannot match input_shapes [" +
                          join_ints(wanted) + "])");
      continue;
    }
    hn.layer(conv)["input"] = order;
    r.changes.push_back("conv '" + conv + "': input reordered [" + join(inputs) + "] -> [" + join(order) +
                        "] to match input_shapes widths [" + join_ints(wanted) + "]");
  }
  r.note = std::to_string(checked) + " multi-input conv(s) checked";
  if (!unmatched.empty()) r.note += "; left unchanged (no consistent order exists): " + join(unmatched, "; ");
  return r;
}

}  // namespace llm2hef::core::har
