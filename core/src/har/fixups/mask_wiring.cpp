// hailo-contract.md section 5.2: the parser slices the head-tiled mask and
// lets each ew_add repeat the slice with input_repeats, which repeats
// element-wise (AABBCC) where heads need tiling (ABCABC). Each ew_add is
// wired to the full mask input instead, with unit repeats; the slices go.
//
// A slice of the mask that reaches no ew_add at all is not the attention
// pattern and is left as it is: LFM2's conv layers take one head's block of
// the mask to build their shift matrices (docs/lfm2.md) and need no tiling.
#include "fixup_common.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core::har {

namespace {

bool feeds_an_ew_add(const HnModel& hn, const std::string& slice) {
  for (const auto& o : hn.outputs(slice))
    if (hn.type(o) == "ew_add") return true;
  return false;
}

bool feeds_sliced_adds(const HnModel& hn, const std::string& input) {
  for (const auto& c : hn.outputs(input))
    if (hn.type(c) == "slice" && feeds_an_ew_add(hn, c)) return true;
  return false;
}

}  // namespace

FixupResult mask_wiring(FixupInput& in) {
  FixupResult r{{}, true, "", {}, {}};  // named by the table in har_fix.cpp
  HnModel& hn = in.hn;
  std::string mask;
  if (in.manifest) {
    const std::string_view role = sdk::runtime_input(sdk::InputRole::attention_mask).role;
    const ManifestInput* input = in.manifest->input(role);
    if (!input) throw BadInput("manifest: no input with role '" + std::string(role) + "'");
    mask = find_input_layer(hn, input->dfc_layer);
  } else {
    std::vector<std::string> candidates;
    for (const auto& n : hn.layers_of_type("input_layer"))
      if (!hn.is_cache(n) && feeds_sliced_adds(hn, n)) candidates.push_back(n);
    if (candidates.size() > 1)
      throw BadInput(hn.label() + ": " + join(candidates) +
                     " all feed slices into ew_adds; cannot tell which is the mask (pass --manifest)");
    if (candidates.empty()) {
      r.note = "no input layer feeds slices into ew_adds (mask already wired, or none)";
      return r;
    }
    mask = candidates[0];
  }
  const auto mask_shapes = hn.output_shapes(mask);
  if (mask_shapes.empty() || mask_shapes[0].size() != 4)
    throw BadInput(hn.label() + ": mask input '" + mask + "' has no rank-4 output shape [-1, 1, SEQ, NHEAD*SEQ]");
  const Shape full = mask_shapes[0];
  std::vector<std::string> slices, left_alone;
  for (const auto& c : hn.outputs(mask))
    if (hn.type(c) == "slice") (feeds_an_ew_add(hn, c) ? slices : left_alone).push_back(c);
  for (const auto& s : slices) {
    const auto outs = hn.outputs(s);
    if (outs.size() != 1 || hn.type(outs[0]) != "ew_add")
      throw BadInput(hn.label() + ": mask slice '" + s + "' feeds " + join(outs) +
                     ", expected exactly one ew_add (hailo-contract.md section 5.2)");
    const std::string add = outs[0];
    if (hn.inputs(add).size() != 2)
      throw BadInput(hn.label() + ": ew_add '" + add + "' has " + std::to_string(hn.inputs(add).size()) +
                     " inputs, expected 2");
    hn.replace_in_list(add, "input", s, {mask});
    hn.replace_in_list(mask, "output", s, {add});
    auto& l = hn.layer(add);
    l["input_shapes"] = nlohmann::ordered_json::array({full, full});
    const nlohmann::ordered_json unit = {{1, 1, 1}, {1, 1, 1}};
    if (l.contains("input_repeats"))
      l["input_repeats"] = unit;
    else
      l["params"]["input_repeats"] = unit;
    l.erase("input_tiles");
    if (l.contains("params") && l["params"].is_object()) l["params"].erase("input_tiles");
    hn.erase(s);
    in.weights.dropped.insert(s);
    r.changes.push_back("wired ew_add '" + add + "' to mask '" + mask + "' directly (input_repeats [[1,1,1],[1,1,1]]," +
                        " no input_tiles) and removed slice '" + s + "'");
  }
  if (slices.empty()) r.note = "mask '" + mask + "' feeds no slices into ew_adds (already wired)";
  if (!left_alone.empty())
    r.note += std::string(r.note.empty() ? "" : "; ") + "left alone (they feed no ew_add): " + join(left_alone);
  return r;
}

}  // namespace llm2hef::core::har
