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

// The widths the outputs should have: the manifest's lm_head_shards, else
// export's own rule; `why` says which.
std::vector<int64_t> wanted_widths(const FixupInput& in, int64_t vocab, std::string& why) {
  if (in.manifest) {
    why = "manifest lm_head_shards";
    return in.manifest->lm_head_shards;  // positive widths: the manifest reader checked them
  }
  return sdk::choose_lm_head_shards(vocab, 0, why);
}

// The layers from the lm_head conv's input down to the output layer.
struct LmHeadPath {
  std::vector<std::string> chain;  // single-consumer slice/normalization layers above the conv
  std::string fan;                 // what feeds the chain (or the conv)
  std::string conv;
  std::vector<std::string> tail;  // per-channel layers between the conv and the output layer
  std::string end;                // the conv, or the last tail layer
  std::string out_layer;
};

// From the output back to the lm_head conv through the per-channel tail,
// then up through the chain above the conv.
LmHeadPath find_lm_head_path(const HnModel& hn, const std::string& end, int64_t vocab) {
  LmHeadPath p;
  p.end = end;
  p.conv = end;
  while (hn.type(p.conv) != "conv") {
    const auto ins = hn.inputs(p.conv);
    if (!per_channel(hn, p.conv) || ins.size() != 1 || hn.outputs(p.conv).size() != 1 ||
        last_width(hn, ins[0], hn.output_shapes(ins[0]), "output_shapes") != vocab)
      throw Unsupported(hn.label() + ": output '" + end + "' is reached from " +
                        (ins.size() == 1 ? "'" + ins[0] + "' " : std::string()) + "through '" + p.conv + "' (" +
                        hn.type(p.conv) + ", " + std::to_string(ins.size()) + " input(s), " +
                        std::to_string(hn.outputs(p.conv).size()) +
                        " consumer(s)); only a chain of one-input, one-consumer per-channel layers (activation, "
                        "normalization, shortcut, one-input ew_*) as wide as the output may sit between the lm_head "
                        "conv and its output layer, as each shard needs its own copy");
    p.tail.insert(p.tail.begin(), p.conv);
    p.conv = ins[0];
  }
  if (hn.inputs(p.conv).size() != 1)
    throw BadInput(hn.label() + ": lm_head conv '" + p.conv + "' has " + std::to_string(hn.inputs(p.conv).size()) +
                   " inputs; expected one");
  const auto conv_outs = hn.outputs(p.conv);
  const auto end_outs = hn.outputs(end);
  if (conv_outs.size() != 1 || end_outs.size() != 1 || hn.type(end_outs[0]) != "output_layer")
    throw BadInput(
        hn.label() + ": lm_head conv '" + p.conv + "' feeds " + join(conv_outs) +
        (p.tail.empty() ? std::string() : " and its last per-channel layer '" + end + "' feeds " + join(end_outs)) +
        ", expected one chain ending in exactly one output_layer");
  p.out_layer = end_outs[0];
  p.fan = hn.inputs(p.conv)[0];
  while ((hn.type(p.fan) == "slice" || hn.type(p.fan) == "normalization") && hn.outputs(p.fan).size() == 1 &&
         hn.inputs(p.fan).size() == 1) {
    p.chain.insert(p.chain.begin(), p.fan);
    p.fan = hn.inputs(p.fan)[0];
  }
  return p;
}

// A copy of `layer` named `copy`, fed by `from` alone and feeding nothing yet.
void copy_layer(HnModel& hn, const std::string& layer, const std::string& copy, const std::string& from) {
  ojson l = hn.layer(layer);
  l["input"] = ojson::array({from});
  l["output"] = ojson::array();
  hn.doc()["layers"][copy] = std::move(l);
}

// What one more shard added: its conv, its last layer (before the output
// layer) and a line for the report.
struct Shard {
  std::string conv, end, change;
};

// Shard k: copies of the chain above the conv, a conv `w` wide, copies of
// the per-channel tail and an output layer.
Shard add_shard(FixupInput& in, const LmHeadPath& p, size_t k, int64_t w,
                std::map<std::string, WeightsEdit::Split>& tail_splits) {
  HnModel& hn = in.hn;
  const std::string scope = scope_of(p.conv);
  std::string prev = p.fan;
  std::vector<std::string> made;
  for (const auto& x : p.chain) {
    const std::string copy = hn.fresh_name(scope, hn.type(x));
    copy_layer(hn, x, copy, prev);
    hn.layer(prev)["output"].push_back(copy);
    in.weights.copies[x].push_back(copy);
    made.push_back(copy);
    prev = copy;
  }
  const std::string c = hn.fresh_name(scope, "conv");
  copy_layer(hn, p.conv, c, prev);
  hn.layer(prev)["output"].push_back(c);
  set_last(hn.layer(c), "output_shapes", w);
  // The per-channel tail, copied behind this shard's conv.
  std::string last = c;
  std::vector<std::string> tail_copies;
  for (const auto& t : p.tail) {
    const std::string copy = hn.fresh_name(scope, hn.type(t));
    copy_layer(hn, t, copy, last);
    hn.layer(last)["output"].push_back(copy);
    set_last(hn.layer(copy), "input_shapes", w);
    set_last(hn.layer(copy), "output_shapes", w);
    tail_splits[t].shards.push_back(copy);
    tail_splits[t].widths.push_back(w);
    tail_copies.push_back(copy);
    last = copy;
  }
  const std::string o = hn.fresh_name(scope, "output_layer");
  copy_layer(hn, p.out_layer, o, last);
  hn.layer(last)["output"] = ojson::array({o});
  set_last(hn.layer(o), "output_shapes", w);
  set_last(hn.layer(o), "input_shapes", w);
  return {c, last,
          "shard " + std::to_string(k) + ": conv '" + c + "' (" + std::to_string(w) + " wide)" +
              (tail_copies.empty() ? std::string() : " -> " + join(tail_copies, " -> ")) + " -> '" + o + "'" +
              (made.empty() ? "" : " behind copies " + join(made)) + " of " + join(p.chain) + ", fed by '" + p.fan +
              "'"};
}

// The first shard is the original path, narrowed to `w`.
void narrow_original(HnModel& hn, const LmHeadPath& p, int64_t w) {
  set_last(hn.layer(p.conv), "output_shapes", w);
  for (const auto& t : p.tail) {
    set_last(hn.layer(t), "input_shapes", w);
    set_last(hn.layer(t), "output_shapes", w);
  }
  set_last(hn.layer(p.out_layer), "input_shapes", w);
  set_last(hn.layer(p.out_layer), "output_shapes", w);
}

// output_layers_order with the shards in place of the original output.
void order_outputs(HnModel& hn, const std::string& end, const std::vector<std::string>& new_ends) {
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
  std::string why;
  const std::vector<int64_t> wanted = wanted_widths(in, vocab, why);
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

  const LmHeadPath p = find_lm_head_path(hn, outs[0], vocab);
  const int64_t w = wanted[0];
  WeightsEdit::Split split{{p.conv}, {w}, false};
  std::vector<std::string> new_convs = {p.conv};
  std::vector<std::string> new_ends = {p.end};
  std::map<std::string, WeightsEdit::Split> tail_splits;
  for (const auto& t : p.tail) tail_splits[t] = WeightsEdit::Split{{t}, {w}, true};
  for (size_t k = 1; k < wanted.size(); ++k) {
    Shard shard = add_shard(in, p, k, w, tail_splits);
    split.shards.push_back(shard.conv);
    split.widths.push_back(w);
    new_convs.push_back(shard.conv);
    new_ends.push_back(shard.end);
    r.changes.push_back(std::move(shard.change));
  }
  narrow_original(hn, p, w);
  for (const auto& c : new_convs) {
    auto& params = hn.layer(c)["params"];
    if (params.is_object() && params.contains("kernel_shape") && params["kernel_shape"].is_array() &&
        !params["kernel_shape"].empty())
      params["kernel_shape"].back() = w;
  }
  order_outputs(hn, p.end, new_ends);
  in.weights.splits[p.conv] = split;
  for (auto& [t, ts] : tail_splits) in.weights.splits[t] = std::move(ts);
  r.changes.insert(r.changes.begin(),
                   "split lm_head conv '" + p.conv + "' (" + std::to_string(vocab) + " wide) into " +
                       std::to_string(wanted.size()) + " x " + std::to_string(w) + " (" + why +
                       "); kernel and bias sliced" +
                       (p.tail.empty() ? std::string()
                                       : "; per-channel layers behind it (" + join(p.tail) +
                                             ") copied per shard, arrays as wide as the output sliced") +
                       "; output_layers_order " + join(new_ends));
  return r;
}

}  // namespace llm2hef::core::har
