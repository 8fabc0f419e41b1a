#include <algorithm>
#include <cctype>

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
  if (type_of(pp) != "TemplateProcessing" || !pp.contains("single") || !pp["single"].is_array() ||
      pp["single"].empty())
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
    if (!id.is_number_integer())
      throw BadInput(where + ": token '" + token + "' has a non-integer id");
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
  } else if (type_of(dec) == "Sequence" && dec.contains("decoders") &&
             dec["decoders"].is_array()) {
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

// Linear scanners for `bos_token` in a Jinja template (std::regex recursed
// per character and overflowed the stack on long templates).
bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The next `bos_token` at or after `from` that is a whole identifier.
size_t find_bos_identifier(const std::string& s, size_t from) {
  static const std::string kName = "bos_token";
  for (size_t at = s.find(kName, from); at != std::string::npos; at = s.find(kName, at + 1)) {
    const bool starts = at == 0 || !is_identifier_char(s[at - 1]);
    const size_t end = at + kName.size();
    if (starts && (end == s.size() || !is_identifier_char(s[end]))) return at;
  }
  return std::string::npos;
}

std::string replace_bos_identifiers(const std::string& s, const std::string& with) {
  std::string out;
  size_t from = 0;
  for (size_t at = find_bos_identifier(s, 0); at != std::string::npos; at = find_bos_identifier(s, from)) {
    out.append(s, from, at - from).append(with);
    from = at + 9;
  }
  return out.append(s, from, std::string::npos);
}

// Removes every `{{ bos_token }}` print, with optional `-` whitespace control.
std::string remove_bos_prints(const std::string& s) {
  auto skip_spaces = [&](size_t i) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    return i;
  };
  std::string out;
  size_t from = 0;
  for (size_t open = s.find("{{"); open != std::string::npos; open = s.find("{{", open + 2)) {
    size_t i = open + 2;
    if (i < s.size() && s[i] == '-') ++i;
    i = skip_spaces(i);
    if (s.compare(i, 9, "bos_token") != 0 || (i + 9 < s.size() && is_identifier_char(s[i + 9]))) continue;
    i = skip_spaces(i + 9);
    if (i < s.size() && s[i] == '-') ++i;
    if (s.compare(i, 2, "}}") != 0) continue;
    out.append(s, from, open - from);
    from = i + 2;
    open = i;  // the next search starts after this print
  }
  return out.append(s, from, std::string::npos);
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
  if (found.text) {
    tmpl = *found.text;
  } else {
    // Base models: the runtime still renders a template, so give it one that
    // passes the text through unchanged.
    tmpl = "{% for message in messages %}{{ message['content'] }}{% endfor %}";
    changes.push_back("chat_template: none in the checkpoint (no chat_template.jinja, no chat_template in "
                      "tokenizer_config.json); hailo-config.json gets a plain concatenation of the message contents");
  }
  // The runtime renders the template without a bos_token variable and adds
  // no BOS itself. A BOS only ever belongs at the very start of the prompt,
  // so every reference to the variable is dropped and the literal text is
  // prepended once: when the template used the variable (Llama 3's original
  // template) or the tokenizer's post-processor would have added it.
  const bool referenced = find_bos_identifier(tmpl, 0) != std::string::npos;
  std::optional<std::string> text = bos;
  if (!text) {
    const nlohmann::json& b = tc.raw().is_object() && tc.raw().contains("bos_token") ? tc.raw()["bos_token"] : nlohmann::json();
    if (b.is_string()) text = b.get<std::string>();
    if (b.is_object() && b.contains("content") && b["content"].is_string()) text = b["content"].get<std::string>();
  }
  if (referenced) {
    if (!text) throw BadInput(found.origin + ": uses bos_token, but no bos_token is defined");
    tmpl = replace_bos_identifiers(remove_bos_prints(tmpl), "''");
    changes.push_back("chat_template: bos_token references removed; BOS '" + *text + "' rendered once at the start");
  }
  if ((referenced || bos) && text && tmpl.rfind(*text, 0) != 0) {
    tmpl = *text + tmpl;
    if (!referenced)
      changes.push_back("chat_template: BOS '" + *text +
                        "' prepended (the runtime ignores the tokenizer's post-processor, which added it)");
  }
  return tmpl;
}

}  // namespace llm2hef::core
