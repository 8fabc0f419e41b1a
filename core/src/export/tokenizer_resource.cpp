#include <algorithm>

#include "llm2hef/core/chat/hailort_template.hpp"
#include "llm2hef/core/checkpoint/checkpoint_dir.hpp"
#include "llm2hef/core/export/tokenizer_resource.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

using nlohmann::json;

namespace {

// `type` of a tokenizers component; "" when absent or not a string (json's
// value() would throw its own type_error, naming neither file nor field).
std::string type_of(const json& component) {
  if (!component.is_object() || !component.contains("type") || !component["type"].is_string()) return "";
  return component["type"].get<std::string>();
}

bool is_strip(const json& step) { return type_of(step) == "Strip"; }

// The text of the special token a TemplateProcessing puts before "$A", if any.
std::optional<std::string> template_bos(const json& pp) {
  if (!pp.is_object()) return std::nullopt;
  if (type_of(pp) == "Sequence" && pp.contains("processors") && pp["processors"].is_array()) {
    for (const auto& p : pp["processors"])
      if (auto b = template_bos(p)) return b;
    return std::nullopt;
  }
  if (type_of(pp) != "TemplateProcessing" || !pp.contains("single") || !pp["single"].is_array() || pp["single"].empty())
    return std::nullopt;
  const json& first = pp["single"][0];
  if (first.is_object() && first.contains("SpecialToken") && first["SpecialToken"].contains("id") &&
      first["SpecialToken"]["id"].is_string())
    return first["SpecialToken"]["id"].get<std::string>();
  return std::nullopt;
}

void check_ids(const json& vocab, const std::string& where, int64_t vocab_size) {
  if (!vocab.is_object()) return;
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer()) throw BadInput(where + ": token '" + token + "' has a non-integer id");
    if (id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab_size)
      throw BadInput(where + ": token '" + token + "' has id " + std::to_string(id.get<int64_t>()) +
                     ", outside the model's vocab_size " + std::to_string(vocab_size));
  }
}

}  // namespace

TokenizerFix fix_tokenizer(json document, const std::string& origin, int64_t vocab_size) {
  // Taken by value and moved in: the one DOM of a tokenizer.json of up to
  // 128 MiB is edited in place, never copied.
  TokenizerFix out;
  out.tokenizer = std::move(document);
  const json& tokenizer = out.tokenizer;
  if (!tokenizer.is_object()) throw BadInput(origin + ": expected a JSON object");
  if (!tokenizer.contains("model") || !tokenizer["model"].is_object() || !tokenizer["model"].contains("type"))
    throw BadInput(origin + ": field 'model': missing or without a 'type' (not a Hugging Face tokenizers file)");
  check_ids(tokenizer["model"].value("vocab", json()), origin + ": field 'model.vocab'", vocab_size);
  if (tokenizer.contains("added_tokens")) {
    const json& added = tokenizer["added_tokens"];
    if (!added.is_array()) throw BadInput(origin + ": field 'added_tokens': expected a list");
    for (const auto& t : added) {
      if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
          !t["content"].is_string())
        throw BadInput(origin + ": field 'added_tokens': entry without integer 'id' and string 'content': " +
                       t.dump(-1, ' ', false, json::error_handler_t::replace));
      if (t["id"].get<int64_t>() < 0 || t["id"].get<int64_t>() >= vocab_size)
        throw BadInput(origin + ": field 'added_tokens': token '" + t["content"].get<std::string>() + "' has id " +
                       std::to_string(t["id"].get<int64_t>()) + ", outside the model's vocab_size " +
                       std::to_string(vocab_size));
    }
  }

  json& dec = out.tokenizer["decoder"];
  if (is_strip(dec)) {
    dec = nullptr;
    out.changes.push_back("tokenizer.json: decoder Strip removed (the runtime detokenizes token by token)");
  } else if (type_of(dec) == "Sequence" && dec.contains("decoders") && dec["decoders"].is_array()) {
    json& steps = dec["decoders"];
    const size_t before = steps.size();
    steps.erase(std::remove_if(steps.begin(), steps.end(), is_strip), steps.end());
    if (steps.size() != before)
      out.changes.push_back("tokenizer.json: " + std::to_string(before - steps.size()) +
                            " decoder Strip step(s) removed (the runtime detokenizes token by token)");
  }
  out.bos = template_bos(tokenizer.value("post_processor", json()));
  return out;
}

namespace {

// A special token's text in tokenizer_config.json: a string, or an
// AddedToken object's "content".
std::optional<std::string> token_text(const sdk::JsonFile& tc, const char* key) {
  const json& raw = tc.raw();
  if (!raw.is_object() || !raw.contains(key)) return std::nullopt;
  const json& t = raw[key];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("content") && t["content"].is_string()) return t["content"].get<std::string>();
  return std::nullopt;
}

}  // namespace

std::string chat_template_for_runtime(const sdk::Checkpoint& ckpt, const std::optional<std::string>& bos,
                                      std::vector<std::string>& changes) {
  return chat_template_for_runtime(find_chat_template(ckpt), ckpt.tokenizer_config(), bos, changes);
}

std::string chat_template_for_runtime(const ChatTemplate& found, const sdk::JsonFile& tc,
                                      const std::optional<std::string>& bos, std::vector<std::string>& changes) {
  changes.insert(changes.end(), found.notes.begin(), found.notes.end());
  std::string tmpl;
  std::string origin = found.origin;
  if (found.text) {
    tmpl = *found.text;
  } else {
    // Base models: the runtime still renders a template, so give it one that
    // passes the text through unchanged.
    tmpl = "{% for message in messages %}{{ message['content'] }}{% endfor %}";
    origin = "the plain concatenation template";
    changes.push_back(
        "chat_template: none in the checkpoint (no chat_template.jinja, no chat_template in "
        "tokenizer_config.json); hailo-config.json gets a plain concatenation of the message contents");
  }
  SpecialTokenTexts tokens;
  tokens.bos = bos ? bos : token_text(tc, "bos_token");
  tokens.eos = token_text(tc, "eos_token");
  tokens.prepend_bos = bos.has_value();
  return template_for_hailort(tmpl, origin, tokens, changes);
}

}  // namespace llm2hef::core
