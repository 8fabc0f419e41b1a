#include "llm2hef/sdk/decoder.hpp"

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

DecoderDims read_decoder_dims(const JsonFile& c) {
  DecoderDims d;
  d.hidden = c.get_size("hidden_size");
  d.layers = c.get_size("num_hidden_layers");
  d.heads = c.get_size("num_attention_heads");
  d.kv_heads = c.find_size("num_key_value_heads", d.heads);
  if (!c.has("head_dim") && d.hidden % d.heads != 0)
    throw BadInput(c.where("hidden_size") + ": " + std::to_string(d.hidden) +
                   " is not divisible by num_attention_heads " + std::to_string(d.heads) +
                   " (and no head_dim is given)");
  d.head_dim = c.find_size("head_dim", d.hidden / d.heads);
  d.vocab = c.get_size("vocab_size");
  d.max_positions = c.find_int("max_position_embeddings").value_or(0);
  if (d.heads % d.kv_heads != 0)
    throw BadInput(c.where("num_key_value_heads") + ": " + std::to_string(d.kv_heads) +
                   " does not divide num_attention_heads " + std::to_string(d.heads));
  return d;
}

LmHead choose_lm_head(const Checkpoint& ckpt, const std::string& embedding, int64_t vocab, int64_t hidden,
                      const std::vector<std::string>& tie_keys) {
  const JsonFile& c = ckpt.config();
  // Every key is read (a malformed one is an error even when another
  // decides); the first one present decides, and absent means tied.
  std::string decided_by = tie_keys.empty() ? std::string("tie_word_embeddings") : tie_keys.back();
  bool tied = true, decided = false;
  for (const std::string& key : tie_keys) {
    const std::optional<bool> value = c.find_bool(key);
    if (value && !decided) {
      tied = *value;
      decided_by = key;
      decided = true;
    }
  }
  if (ckpt.has("lm_head.weight")) {
    ckpt.expect("lm_head.weight", {vocab, hidden});
    return {"lm_head.weight", false};
  }
  if (!tied) throw BadInput(c.where(decided_by) + ": false, but the checkpoint has no lm_head.weight");
  return {embedding, true};
}

Plan decoder_plan(const ModelDims& dims, const std::string& embedding, const ExportOptions& opt) {
  Plan p;
  p.dims = dims;  // cache_size and prefill are the core's to fill (settle_plan)
  p.pe_q_tiles = dims.heads;
  p.pe_k_tiles = dims.kv_heads;
  p.embedding_tensor = embedding;
  p.lm_head_shards = choose_lm_head_shards(dims.vocab, opt.lm_head_shards, p.lm_head_shard_reason);
  return p;
}

void note_gqa_and_rope_rewrite(std::vector<std::string>& rewrites, int64_t heads, int64_t kv_heads) {
  rewrites.push_back("GQA " + std::to_string(heads) + "/" + std::to_string(kv_heads) +
                     " through a constant repeat-interleave MatMul; RoPE through a constant rotate-half MatMul");
}

std::string read_activation(const JsonFile& c, const std::string& key, std::initializer_list<const char*> allowed,
                            const std::string& supported) {
  const std::string act = c.find_string(key).value_or(*allowed.begin());
  for (const char* a : allowed)
    if (act == a) return act;
  throw Unsupported(c.where(key) + ": '" + act + "' is not supported (" + supported + ")");
}

void note_cache_beyond_positions(Plan& p, const ExportOptions& opt, int64_t max_positions) {
  if (max_positions > 0 && opt.cache_size > max_positions)
    p.notes.push_back("--cache " + std::to_string(opt.cache_size) + " exceeds max_position_embeddings " +
                      std::to_string(max_positions) + ": quality beyond it is the model's own");
}

DecoderInputs decoder_inputs(GraphBuilder& g, const Plan& plan) {
  DecoderInputs io;
  io.runtime = declare_runtime_inputs(g, plan);
  io.pe = tile_pe_tables(g, io.runtime, plan);
  return io;
}

Value apply_norm(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const NormSpec& spec) {
  auto s = g.scope(spec.scope);
  if (spec.bias && spec.bias->empty() && spec.weight.empty()) return layer_norm_without_affine(g, x, spec.eps);
  if (spec.bias) {
    if (spec.weight_offset != 0.0f)
      throw InternalError("norm '" + spec.scope + "': a weight offset applies to RMSNorm only");
    return layer_norm(g, ckpt, x, spec.weight, *spec.bias, spec.eps);
  }
  return rms_norm(g, ckpt, x, spec.weight, spec.eps, spec.weight_offset);
}

void decoder_tail(GraphBuilder& g, const Checkpoint& ckpt, const Value& hidden, const TailSpec& t) {
  Value x = t.final_norm ? apply_norm(g, ckpt, hidden, *t.final_norm) : hidden;
  if (!t.project_out.empty()) {
    auto s = g.scope("project_out");
    x = linear(g, ckpt, x, {t.project_out, std::nullopt});
  }
  const Value last = last_position(g, x);
  auto s = g.scope("lm_head");
  const Value head = t.logit_scale == 1.0f
                         ? g.weight("weight", ckpt, t.lm_head, {.transpose = true})
                         : g.scaled_weight("weight", ckpt, t.lm_head, {.transpose = true}, t.logit_scale);
  Value logits = g.matmul(last, head);
  if (t.lm_head_bias) {
    ckpt.expect(*t.lm_head_bias, {head.shape[1]});
    const Value bias = g.weight("bias", ckpt, *t.lm_head_bias);
    logits = g.add(logits, bias);
  }
  if (t.logit_softcap <= 0) {
    g.output(logits, "logits");
    return;
  }
  // HF's `logits / c; tanh; * c` (final_logit_softcapping).
  auto cap_scope = g.scope("final_logit_softcap");
  const Value cap = g.scalar("cap", t.logit_softcap);
  const Value scaled = g.div(logits, cap);
  const Value capped = g.tanh(scaled);
  g.output(g.mul(capped, cap), "logits");
}

}  // namespace llm2hef::sdk
