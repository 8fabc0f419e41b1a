// hailo-contract.md section 5.3: a ~152K-wide lm_head conv cannot be placed.
// It is split into equal output convs (the runtime requires equal output
// frame sizes), each behind its own copy of the single-consumer slice /
// normalization chain that feeds it (the post-fuser breaks when one
// normalization layer fans out to >= 3 successors), each with its own
// output layer; kernel and bias are sliced per shard and
// output_layers_order lists the shards in place of the original conv.
// The widths come from manifest.json (`lm_head_shards`, what export chose),
// else from the same rule export uses.
//
// Between the conv and its output layer may sit per-channel layers: the
// final logit soft-cap tanh(x / c) * c of Gemma 2 (and of a Gemma 3 whose
// config sets final_logit_softcapping). Each shard gets its own copy of
// them, so every shard's logits are capped, not only the first's; arrays as
// wide as the vocabulary are sliced with the conv's columns.
#include <map>

#include "fixup_common.hpp"
#include "llm2hef/sdk/blocks.hpp"

namespace llm2hef::core::har {

namespace {

using ojson = nlohmann::ordered_json;

void set_last(ojson& layer, const char* field, int64_t w) {
  if (!layer.contains(field)) return;
  for (auto& s : layer[field])
    if (!s.empty()) s.back() = w;
}

// Layers that compute each output channel from the same channel alone, so
// a copy per shard computes what the whole did: activations (tanh), per-channel
// normalization (a scale), one-input elementwise ops (a constant folded in),
// shortcuts. How the parser writes a Div or Mul by a scalar is not public, so
// these are the HN types (hailo-contract.md section 4) that can hold one.
bool per_channel(const HnModel& hn, const std::string& layer) {
  const std::string t = hn.type(layer);
  if (t == "activation" || t == "normalization" || t == "shortcut") return true;
  return (t == "ew_mult" || t == "ew_div" || t == "ew_add" || t == "ew_sub") && hn.inputs(layer).size() == 1;
}

std::vector<std::string> output_convs(const HnModel& hn) {
  std::vector<std::string> order = hn.output_order();
  if (!order.empty()) return order;
  // No output_layers_order: the producers of the output layers, in order.
  for (const auto& o : hn.layers_of_type("output_layer"))
    for (const auto& p : hn.inputs(o)) order.push_back(p);
  return order;
}

}  // namespace

FixupResult lm_head_split(FixupInput& in) {
  FixupResult r{{}, true, "", {}, {}};  // named by the table in har_fix.cpp
  HnModel& hn = in.hn;
  const std::vector<std::string> outs = output_convs(hn);
  if (outs.empty()) throw BadInput(hn.label() + ": the HN has no outputs (no output_layers_order, no output_layer)");
  std::vector<int64_t> widths;
  int64_t vocab = 0;
  for (const auto& o : outs) {
    widths.push_back(last_width(hn, o, hn.output_shapes(o), "output_shapes"));
    vocab += widths.back();
  }
  std::vector<int64_t> wanted;
  std::string why;
  if (in.manifest) {
    wanted = in.manifest->lm_head_shards;  // positive widths: the manifest reader checked them
    why = "manifest lm_head_shards";
  } else {
    wanted = sdk::choose_lm_head_shards(vocab, 0, why);
  }
  int64_t wanted_sum = 0;
  for (int64_t w : wanted) wanted_sum += w;
  if (wanted_sum != vocab)
    throw BadInput(hn.label() + ": the outputs are " + std::to_string(vocab) + " wide in all, the shards (" + why +
                   ") sum to " + std::to_string(wanted_sum));
  if (widths == wanted) {
    r.note = std::to_string(outs.size()) + " output(s) of " + join_ints(widths) + " as wanted (" + why + ")";
    return r;
  }
  if (outs.size() != 1)
    throw BadInput(hn.label() + ": the HN has " + std::to_string(outs.size()) + " outputs (" + join_ints(widths) +
                   "), the shards wanted are " + join_ints(wanted) + " (" + why + "); refusing to re-split");
  for (size_t i = 1; i < wanted.size(); ++i)
    if (wanted[i] != wanted[0])
      throw Unsupported("lm_head shards " + join_ints(wanted) +
                        " are not equal; the runtime requires equal output frame sizes (hailo-contract.md section 9)");

  // From the output back to the lm_head conv through the per-channel tail.
  const std::string end = outs[0];
  std::vector<std::string> tail;
  std::string conv = end;
  while (hn.type(conv) != "conv") {
    const auto ins = hn.inputs(conv);
    if (!per_channel(hn, conv) || ins.size() != 1 || hn.outputs(conv).size() != 1 ||
        last_width(hn, ins[0], hn.output_shapes(ins[0]), "output_shapes") != vocab)
      throw Unsupported(hn.label() + ": output '" + end + "' is reached from " +
                        (ins.size() == 1 ? "'" + ins[0] + "' " : std::string()) + "through '" + conv + "' (" +
                        hn.type(conv) + ", " + std::to_string(ins.size()) + " input(s), " +
                        std::to_string(hn.outputs(conv).size()) +
                        " consumer(s)); only a chain of one-input, one-consumer per-channel layers (activation, "
                        "normalization, shortcut, one-input ew_*) as wide as the output may sit between the lm_head "
                        "conv and its output layer, as each shard needs its own copy");
    tail.insert(tail.begin(), conv);
    conv = ins[0];
  }
  if (hn.inputs(conv).size() != 1)
    throw BadInput(hn.label() + ": lm_head conv '" + conv + "' has " + std::to_string(hn.inputs(conv).size()) +
                   " inputs; expected one");
  const auto conv_outs = hn.outputs(conv);
  const auto end_outs = hn.outputs(end);
  if (conv_outs.size() != 1 || end_outs.size() != 1 || hn.type(end_outs[0]) != "output_layer")
    throw BadInput(
        hn.label() + ": lm_head conv '" + conv + "' feeds " + join(conv_outs) +
        (tail.empty() ? std::string() : " and its last per-channel layer '" + end + "' feeds " + join(end_outs)) +
        ", expected one chain ending in exactly one output_layer");
  const std::string out_layer = end_outs[0];
  // The single-consumer slice/normalization chain above the conv.
  std::vector<std::string> chain;
  std::string fan = hn.inputs(conv)[0];
  while ((hn.type(fan) == "slice" || hn.type(fan) == "normalization") && hn.outputs(fan).size() == 1 &&
         hn.inputs(fan).size() == 1) {
    chain.insert(chain.begin(), fan);
    fan = hn.inputs(fan)[0];
  }
  const std::string scope = scope_of(conv);
  const int64_t w = wanted[0];
  WeightsEdit::Split split;
  split.shards.push_back(conv);
  split.widths.push_back(w);
  std::vector<std::string> new_convs = {conv};
  std::vector<std::string> new_ends = {end};
  std::map<std::string, WeightsEdit::Split> tail_splits;
  for (const auto& t : tail) tail_splits[t] = WeightsEdit::Split{{t}, {w}, true};
  for (size_t k = 1; k < wanted.size(); ++k) {
    std::string prev = fan;
    std::vector<std::string> made;
    for (const auto& x : chain) {
      const std::string copy = hn.fresh_name(scope, hn.type(x));
      ojson l = hn.layer(x);
      l["input"] = ojson::array({prev});
      l["output"] = ojson::array();
      hn.doc()["layers"][copy] = std::move(l);
      hn.layer(prev)["output"].push_back(copy);
      in.weights.copies[x].push_back(copy);
      made.push_back(copy);
      prev = copy;
    }
    const std::string c = hn.fresh_name(scope, "conv");
    ojson cl = hn.layer(conv);
    cl["input"] = ojson::array({prev});
    cl["output"] = ojson::array();
    hn.doc()["layers"][c] = std::move(cl);
    hn.layer(prev)["output"].push_back(c);
    set_last(hn.layer(c), "output_shapes", w);
    // The per-channel tail, copied behind this shard's conv.
    std::string last = c;
    std::vector<std::string> tail_copies;
    for (const auto& t : tail) {
      const std::string copy = hn.fresh_name(scope, hn.type(t));
      ojson l = hn.layer(t);
      l["input"] = ojson::array({last});
      l["output"] = ojson::array();
      hn.doc()["layers"][copy] = std::move(l);
      hn.layer(last)["output"].push_back(copy);
      set_last(hn.layer(copy), "input_shapes", w);
      set_last(hn.layer(copy), "output_shapes", w);
      tail_splits[t].shards.push_back(copy);
      tail_splits[t].widths.push_back(w);
      tail_copies.push_back(copy);
      last = copy;
    }
    const std::string o = hn.fresh_name(scope, "output_layer");
    ojson ol = hn.layer(out_layer);
    ol["input"] = ojson::array({last});
    ol["output"] = ojson::array();
    hn.doc()["layers"][o] = std::move(ol);
    hn.layer(last)["output"] = ojson::array({o});
    set_last(hn.layer(o), "output_shapes", w);
    set_last(hn.layer(o), "input_shapes", w);
    split.shards.push_back(c);
    split.widths.push_back(w);
    new_convs.push_back(c);
    new_ends.push_back(last);
    r.changes.push_back("shard " + std::to_string(k) + ": conv '" + c + "' (" + std::to_string(w) + " wide)" +
                        (tail_copies.empty() ? std::string() : " -> " + join(tail_copies, " -> ")) + " -> '" + o + "'" +
                        (made.empty() ? "" : " behind copies " + join(made)) + " of " + join(chain) + ", fed by '" +
                        fan + "'");
  }
  set_last(hn.layer(conv), "output_shapes", w);
  for (const auto& t : tail) {
    set_last(hn.layer(t), "input_shapes", w);
    set_last(hn.layer(t), "output_shapes", w);
  }
  set_last(hn.layer(out_layer), "input_shapes", w);
  set_last(hn.layer(out_layer), "output_shapes", w);
  for (const auto& c : new_convs) {
    auto& p = hn.layer(c)["params"];
    if (p.is_object() && p.contains("kernel_shape") && p["kernel_shape"].is_array() && !p["kernel_shape"].empty())
      p["kernel_shape"].back() = w;
  }
  auto& np = hn.doc()["net_params"];
  ojson order = ojson::array();
  if (np.is_object() && np.contains("output_layers_order"))
    for (const auto& n : np["output_layers_order"]) {
      if (n.get<std::string>() == end)
        for (const auto& e : new_ends) order.push_back(e);
      else
        order.push_back(n);
    }
  else
    for (const auto& e : new_ends) order.push_back(e);
  np["output_layers_order"] = order;
  in.weights.splits[conv] = split;
  for (auto& [t, ts] : tail_splits) in.weights.splits[t] = std::move(ts);
  r.changes.insert(r.changes.begin(),
                   "split lm_head conv '" + conv + "' (" + std::to_string(vocab) + " wide) into " +
                       std::to_string(wanted.size()) + " x " + std::to_string(w) + " (" + why +
                       "); kernel and bias sliced" +
                       (tail.empty() ? std::string()
                                     : "; per-channel layers behind it (" + join(tail) +
                                           ") copied per shard, arrays as wide as the output sliced") +
                       "; output_layers_order " + join(new_ends));
  return r;
}

}  // namespace llm2hef::core::har
