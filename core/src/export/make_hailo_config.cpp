#include "llm2hef/core/export/make_hailo_config.hpp"
#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/runtime/hailo_config.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

using nlohmann::json;

namespace {

std::optional<int64_t> added_token_id(const json& tokenizer, const std::string& content) {
  if (!tokenizer.contains("added_tokens")) return std::nullopt;
  for (const auto& t : tokenizer["added_tokens"])
    if (t.is_object() && t.contains("content") && t["content"] == content && t.contains("id") &&
        t["id"].is_number_integer())
      return t["id"].get<int64_t>();
  return std::nullopt;
}

std::vector<int64_t> eos_ids(const sdk::Checkpoint& ckpt, const json& tokenizer) {
  for (const sdk::JsonFile* f : {&ckpt.generation_config(), &ckpt.config()})
    if (auto ids = f->find_int_list("eos_token_id"); ids && !ids->empty()) return *ids;
  // Fall back to the tokenizer's eos text.
  const json& tc = ckpt.tokenizer_config().raw();
  if (tc.is_object() && tc.contains("eos_token")) {
    const json& e = tc["eos_token"];
    const json& content = e.is_object() && e.contains("content") ? e["content"] : e;
    const std::string text = content.is_string() ? content.get<std::string>() : "";
    if (auto id = added_token_id(tokenizer, text)) return {*id};
  }
  throw BadInput(
      ckpt.dir().string() +
      ": no eos_token_id in generation_config.json or config.json, and no eos_token in tokenizer_config.json;"
      " the Hailo runtime requires one");
}

}  // namespace

json make_hailo_config(const sdk::Checkpoint& ckpt, const sdk::Plan& plan, const TokenizerFix& tok,
                       std::vector<std::string>& changes) {
  return make_hailo_config(ckpt, plan, tok, find_chat_template(ckpt), changes);
}

json make_hailo_config(const sdk::Checkpoint& ckpt, const sdk::Plan& plan, const TokenizerFix& tok,
                       const ChatTemplate& chat_template, std::vector<std::string>& changes) {
  HailoConfig config;
  const std::vector<int64_t> eos = eos_ids(ckpt, tok.tokenizer);
  for (int64_t id : eos)
    if (id < 0 || id >= plan.dims.vocab)
      throw BadInput(ckpt.dir().string() + ": eos token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                     std::to_string(plan.dims.vocab - 1) +
                     "); check eos_token_id in generation_config.json and config.json");
  config.eos_token_id = eos.front();
  config.stop_token_id = eos;
  config.chat_template = chat_template_for_runtime(chat_template, ckpt.tokenizer_config(), tok.bos, changes);

  // Reasoning markers, when the tokenizer has them (Qwen3, SmolLM3, ...).
  config.begin_of_reasoning_token_id = added_token_id(tok.tokenizer, "<think>");
  config.end_of_reasoning_token_id = added_token_id(tok.tokenizer, "</think>");

  // Generation defaults: the model's own, else Hugging Face's (greedy).
  const sdk::JsonFile& gc = ckpt.generation_config();
  HailoGenerationParams& gen = config.default_generation_params.emplace();
  gen.max_new_tokens = gc.find_int("max_new_tokens").value_or(256);
  gen.temperature = gc.find_number("temperature").value_or(1.0);
  gen.top_p = gc.find_number("top_p").value_or(1.0);
  gen.top_k = gc.find_int("top_k").value_or(50);
  gen.repetition_penalty = gc.find_number("repetition_penalty").value_or(1.0);
  gen.do_sample = gc.find_bool("do_sample").value_or(false);

  // The runtime tiles the mask and the q tables num_attention_heads times and
  // the k tables num_key_value_heads times; the key is `_count`, not `_size`.
  HailoPreProcessParams& pre = config.pre_process_params.emplace();
  pre.kv_cache_size = plan.cache_size;
  pre.num_attention_heads = plan.pe_q_tiles;
  pre.num_key_value_heads = plan.pe_k_tiles;
  pre.prefill_input_tokens_count = plan.prefill;
  HailoInputSuffixes& suffixes = config.input_layers_names_suffixes.emplace();
  for (const sdk::RuntimeInput& input : sdk::kRuntimeInputs)
    suffixes.by_role[std::string(input.role)] = input.dfc_layer;

  // The adapter's overrides are a JSON merge patch (SDK ABI), so they apply
  // to the written document, not to the type.
  json cfg = hailo_config_json(config);
  if (!plan.hailo_config_overrides.is_null()) cfg.merge_patch(plan.hailo_config_overrides);

  // The same rule table `hef check` and `set-config` judge hailo-config.json
  // by: export never writes a config that the check of its own HEF refuses.
  const std::string where = ckpt.dir().string() +
                            ": the hailo-config.json made from it (default_generation_params "
                            "from generation_config.json)";
  std::string refused;
  for (const rules::Finding& f : hef::check_hailo_config_text(cfg.dump(), where))
    if (f.severity == rules::Severity::error) refused += "\n  " + rules::finding_tag(f) + " " + f.message;
  if (!refused.empty())
    throw BadInput(ckpt.dir().string() +
                   ": the hailo-config.json export would write fails `llm2hef hef check`:" + refused);
  return cfg;
}

}  // namespace llm2hef::core
