// Scalar multipliers on the residual stream, the attention scores and the
// logits (Granite's embedding_multiplier, attention_multiplier,
// residual_multiplier, logits_scaling; Gemma's sqrt(hidden) embedding scale).
//
// Where each one goes, and why (docs/mistral-granite.md, "Granite"):
// - residual and logit scales are folded into the weights that produce the
//   scaled value (o_proj and down_proj rows, the lm_head), so the DFC sees
//   plain convs; the only difference from HF is where one float32 rounding
//   happens (w*s rounded once per weight instead of once per output);
// - the attention scale replaces 1/sqrt(head_dim) in the score Div, as
//   Div(q k^T, 1/scale): the op the recipe that ran on silicon already has;
// - the embedding scale is a Mul node on inputs_embeds: the runtime copies
//   embedding rows raw from embeddings.bin (the checkpoint's table), and the
//   first norm is not scale-invariant (eps), so there is nothing to fold into.
#pragma once

#include <string>
#include <vector>

#include "llm2hef/families/families.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::families {

struct ScalarMultipliers {
  double embedding = 1.0;  // inputs_embeds * embedding
  double attention = 0.0;  // scores * attention; 0 = the default 1/sqrt(head_dim)
  double residual = 1.0;   // h + branch * residual
  double logits = 1.0;     // logits * logits (Granite: 1 / logits_scaling)

  bool any() const { return embedding != 1.0 || attention != 0.0 || residual != 1.0 || logits != 1.0; }
  // One line per multiplier that is not neutral, saying where it went.
  std::vector<std::string> rewrites() const;
  // The score divisor the attention Div uses: 1/attention, else sqrt(head_dim).
  float score_divisor(int64_t head_dim) const;
};

// Granite's four keys (each a positive finite number; absent = neutral):
// embedding_multiplier, attention_multiplier, residual_multiplier and
// logits_scaling (the logits are divided by it).
ScalarMultipliers read_granite_multipliers(const JsonFile& config);

// x * factor as one Mul by a scalar constant (leaf names the constant).
Value scale_by(GraphBuilder& g, const Value& x, float factor, const std::string& leaf);

}  // namespace llm2hef::families
