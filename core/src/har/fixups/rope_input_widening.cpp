// hailo-contract.md section 5.1: the runtime writes each pe table already
// tiled per head (HD*NKVHEAD or HD*NHEAD wide), so the parser's tiling conv
// behind each pe input would tile a second time. The input layer is widened
// to the conv's output and wired straight to the conv's consumers; the conv
// and its weights go.
#include "fixup_common.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core::har {

FixupResult rope_input_widening(FixupInput& in) {
  FixupResult r{{}, true, "", {}, {}};  // named by the table in har_fix.cpp
  HnModel& hn = in.hn;
  // With the manifest, exactly its four pe layers and their tile counts.
  std::vector<std::pair<std::string, int64_t>> expected;  // layer, tiles (0 = any)
  int64_t theta = 0;
  if (in.manifest) {
    theta = in.manifest->theta_length;
    for (const ManifestInput& inp : in.manifest->inputs) {
      // The pe tables and their tiling, by role (the runtime contract's table).
      const sdk::RuntimeInput* contract = sdk::find_runtime_input(inp.role);
      if (!contract || contract->tiling == sdk::PeTiling::none) continue;
      const int64_t tiles =
          contract->tiling == sdk::PeTiling::q_heads ? in.manifest->pe_q_tiles : in.manifest->pe_k_tiles;
      expected.push_back({find_input_layer(hn, inp.dfc_layer), tiles});
    }
  } else {
    for (const auto& n : hn.layers_of_type("input_layer")) expected.push_back({n, 0});
  }
  std::vector<TilingConv> found;
  std::vector<std::string> already;
  for (const auto& [layer, tiles] : expected) {
    auto c = tiling_conv_behind(hn, layer);
    if (in.manifest) {
      const int64_t w = last_width(hn, layer, hn.output_shapes(layer), "output_shapes");
      if (!c) {
        if (w == theta * tiles) {
          already.push_back(layer);
          continue;
        }
        throw BadInput(hn.label() + ": pe input '" + layer + "' is " + std::to_string(w) +
                       " wide and feeds no tiling conv; the manifest expects " + std::to_string(theta) + " x " +
                       std::to_string(tiles) + " (hailo-contract.md section 5.1)");
      }
      if (c->width != theta || c->widened != theta * tiles)
        throw BadInput(hn.label() + ": pe input '" + layer + "' feeds conv '" + c->conv + "' of " +
                       std::to_string(c->width) + " -> " + std::to_string(c->widened) + "; the manifest expects " +
                       std::to_string(theta) + " -> " + std::to_string(theta * tiles));
    }
    if (c) found.push_back(*c);
  }
  for (const auto& c : found) {
    const auto consumers = hn.outputs(c.conv);
    auto& l = hn.layer(c.input);
    for (const char* f : {"input_shapes", "output_shapes"})
      if (l.contains(f))
        for (auto& s : l[f])
          if (!s.empty()) s.back() = c.widened;
    const Shape widened = hn.output_shapes(c.input).at(0);
    l["output"] = consumers;
    for (const auto& k : consumers) {
      const auto ins = hn.inputs(k);
      hn.replace_in_list(k, "input", c.conv, {c.input});
      auto& kl = hn.layer(k);
      if (kl.contains("input_shapes"))
        for (size_t i = 0; i < ins.size() && i < kl["input_shapes"].size(); ++i)
          if (ins[i] == c.conv) kl["input_shapes"][i] = widened;
    }
    hn.erase(c.conv);
    in.weights.dropped.insert(c.conv);
    r.changes.push_back("widened '" + c.input + "' from " + std::to_string(c.width) + " to " +
                        std::to_string(c.widened) + " (" + std::to_string(c.widened / c.width) +
                        " tiles) and removed tiling conv '" + c.conv + "', now feeding " + join(consumers));
  }
  // Already as wide: widened by an earlier run, or tiled once (one KV head:
  // the k tables are theta x 1, and the export's identity tiling conv stays).
  if (!already.empty()) r.note = "pe inputs already as wide as the runtime writes them: " + join(already);
  if (found.empty() && already.empty()) r.note = "no pe input feeds a tiling conv";
  return r;
}

}  // namespace llm2hef::core::har
