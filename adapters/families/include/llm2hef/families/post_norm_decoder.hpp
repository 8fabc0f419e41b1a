// Decoders whose branches normalize their own output before the residual Add
// (docs/architectures.md section 8): Gemma 2 and Gemma 3 put a norm before and
// after both the attention and the MLP ("sandwich" norms: input_layernorm,
// post_attention_layernorm, pre_feedforward_layernorm,
// post_feedforward_layernorm); OLMo 2 keeps only the two after
// (h = h + norm(attn(h))). describe_post_norm_decoder() returns the
// description (decoder_model.hpp) with either placement, which each member
// edits: OLMo 2 its full-width QK-Norm, the Gemma reading (gemma_family.hpp)
// its (1 + w) norms, GeGLU, soft-caps, sliding layers and RoPE bases.
#pragma once

#include "llm2hef/families/families.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/decoder_model.hpp"

namespace llm2hef::families {

// The keys all three share: sizes (head_dim from config.json when given),
// intermediate_size, rms_norm_eps (`default_eps` when absent: the member's
// config class decides), tie_word_embeddings; the embedding and the head.
// Refuses attention_bias (no released member has biases and no fixture
// checks them) and mlp_bias. Every layer: input_layernorm, self_attn
// (q/k/v/o_proj, RoPE base 0) and post_attention_layernorm, then
// pre_feedforward_layernorm, a SwiGLU mlp and post_feedforward_layernorm;
// the final norm. `placement` is NormPlacement::sandwich (all four norms:
// Gemma) or NormPlacement::post (only the two after each body: OLMo 2).
// Theta is the member's to set. No layer slides until the member says so;
// the --sliding-window band option is offered.
DecoderModel describe_post_norm_decoder(const Checkpoint& ckpt, double default_eps, NormPlacement placement);

// Every RMSNorm of a description (each branch's, the final one, the QK-Norm)
// scales by (offset + w) instead of w (Gemma's (1 + w)).
void set_norm_weight_offset(DecoderModel& m, float offset);

}  // namespace llm2hef::families
