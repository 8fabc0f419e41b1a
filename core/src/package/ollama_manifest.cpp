// The manifest.json hailo-ollama reads, from what `llm2hef export` wrote.
//
// Fields and types as hailo_model_zoo_genai v5.1.1 parses them
// (src/library/model/simple_store.cpp model_from_json, store.hpp):
//   hef_h10h          string, required: the blob's SHA-256 (blob/sha256_<hex>)
//   template_params   required object; chat_template, bos_token, eos_token are
//                     all required strings (NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE)
//   generation_params optional; temperature, top_p, top_k, frequency_penalty
//                     optional numbers, stop_tokens an optional list of strings
//   details           optional object, re-read as ModelInfoDetails (dto/DTOs.hpp)
// license and system_prompt are not read by v5.1.1 but appear in every
// manifest Hailo ships (as null); they are written the same way.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "llm2hef/core/export/tokenizer_resource.hpp"
#include "llm2hef/core/package/package.hpp"
#include "llm2hef/core/runtime/hailo_config.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::package {

using nlohmann::json;
using nlohmann::ordered_json;
namespace key = hailo_config_key;

namespace {

// Ollama's way of writing a size ("135M", "1.5B"), from the export's count;
// "" when the export recorded none.
std::string parameter_size(const std::optional<int64_t>& parameters) {
  if (!parameters) return "";
  const double n = static_cast<double>(*parameters);
  char buf[32];
  if (n >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1fB", n / 1e9);
  else if (n >= 1e6)
    std::snprintf(buf, sizeof buf, "%.0fM", n / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.0fK", n / 1e3);
  return buf;
}

std::string where(const std::string& file, const std::string& field) { return file + ": field '" + field + "'"; }

// The text the runtime yields for a token id, when it is certain: added
// (special) tokens decode to their content verbatim. Plain vocabulary entries
// are spelled in the model's encoding (byte-level 'Ġ', SentencePiece '▁'), not
// as the decoded text hailo-ollama compares stop tokens with, so they are not
// guessed.
std::optional<std::string> added_token_text(const json& tokenizer, int64_t id) {
  if (!tokenizer.is_object() || !tokenizer.contains("added_tokens") || !tokenizer["added_tokens"].is_array())
    return std::nullopt;
  for (const auto& t : tokenizer["added_tokens"])
    if (t.is_object() && t.contains("id") && t["id"].is_number_integer() && t["id"].get<int64_t>() == id &&
        t.contains("content") && t["content"].is_string())
      return t["content"].get<std::string>();
  return std::nullopt;
}

std::vector<int64_t> id_list(const json& cfg, const std::string& name, const std::string& file) {
  const json& v = cfg.at(name);
  if (v.is_number_integer()) return {v.get<int64_t>()};
  if (!v.is_array()) throw BadInput(where(file, name) + ": expected a token id or a list of ids");
  std::vector<int64_t> ids;
  for (const auto& e : v) {
    if (!e.is_number_integer()) throw BadInput(where(file, name) + ": expected a list of token ids");
    ids.push_back(e.get<int64_t>());
  }
  return ids;
}

ordered_json generation_params(const json& cfg, const std::vector<std::string>& stop_tokens, const std::string& file,
                               std::vector<std::string>& notes) {
  ordered_json gen;
  gen["stop_tokens"] = stop_tokens;
  const json gp = cfg.value(key::kDefaultGenerationParams, json::object());
  if (!gp.is_object()) throw BadInput(where(file, key::kDefaultGenerationParams) + ": expected an object");
  auto number = [&](const char* name) -> std::optional<double> {
    if (!gp.contains(name) || gp[name].is_null()) return std::nullopt;
    if (!gp[name].is_number())
      throw BadInput(where(file, std::string(key::kDefaultGenerationParams) + "." + name) + ": expected a number");
    return gp[name].get<double>();
  };
  // hailo-ollama (controller.cpp handle_completion) samples unless the
  // temperature is 0, which turns sampling off; Hugging Face's do_sample=false
  // (greedy) is therefore written as temperature 0.
  const bool greedy = gp.contains(key::kDoSample) && gp[key::kDoSample].is_boolean() && !gp[key::kDoSample].get<bool>();
  if (greedy) {
    gen["temperature"] = 0.0;
    notes.push_back("generation_params.temperature: 0 (greedy), because do_sample is false in " + file);
  } else if (auto t = number(key::kTemperature)) {
    gen["temperature"] = *t;
  }
  if (auto p = number(key::kTopP)) gen["top_p"] = *p;
  if (auto k = number(key::kTopK)) {
    if (*k < 0)
      throw BadInput(where(file, std::string(key::kDefaultGenerationParams) + "." + key::kTopK) + ": negative");
    gen["top_k"] = static_cast<int64_t>(*k);
  }
  // Written as Hailo's own manifests do; hailo-ollama v5.1.1 does not read it.
  if (auto r = number(key::kRepetitionPenalty)) gen["repetition_penalty"] = *r;
  return gen;
}

}  // namespace

ordered_json make_ollama_manifest(const ExportFacts& facts, const std::string& sha256,
                                  std::vector<std::string>& notes) {
  const std::string cfg_file = facts.hailo_config_path.empty()
                                   ? "resources/hailo-config.json (beside " + facts.manifest_path + ")"
                                   : facts.hailo_config_path;
  // Read as JSON, not as the typed HailoConfig: this reading takes more than
  // the server does (an eos_token_id list, null generation values) and names
  // the field at fault in its own words; by the time package gets here the
  // HEF carrying this very document has passed `hef check`.
  const json& cfg = facts.hailo_config;
  if (!cfg.is_object()) throw BadInput(cfg_file + ": not a JSON object");
  for (const char* name : {key::kChatTemplate, key::kEosTokenId})
    if (!cfg.contains(name)) throw BadInput(where(cfg_file, name) + ": missing");
  if (!cfg[key::kChatTemplate].is_string()) throw BadInput(where(cfg_file, key::kChatTemplate) + ": expected a string");

  // Stop tokens: hailo-ollama compares each generated token's text with them.
  // The runtime also stops by itself on the ids in hailo-config.json, so an id
  // without a certain text loses only the text-level check.
  const std::vector<int64_t> eos = id_list(cfg, key::kEosTokenId, cfg_file);
  if (eos.empty()) throw BadInput(where(cfg_file, key::kEosTokenId) + ": empty");
  const std::vector<int64_t> stops = cfg.contains(key::kStopTokenId) ? id_list(cfg, key::kStopTokenId, cfg_file) : eos;
  std::vector<std::string> stop_texts;
  for (int64_t id : stops) {
    auto text = added_token_text(facts.tokenizer, id);
    if (!text) {
      notes.push_back(
          "stop token id " + std::to_string(id) +
          " is not an added token of tokenizer.json: left out of stop_tokens (the runtime still stops on it)");
      continue;
    }
    if (std::find(stop_texts.begin(), stop_texts.end(), *text) == stop_texts.end()) stop_texts.push_back(*text);
  }
  std::string eos_text;
  if (auto t = added_token_text(facts.tokenizer, eos.front())) {
    eos_text = *t;
  } else {
    notes.push_back("eos token id " + std::to_string(eos.front()) +
                    " is not an added token of tokenizer.json: template_params.eos_token left empty");
  }

  // The exported template already starts with the literal BOS and has no
  // bos_token references (export made it literal for the genai runtime), so
  // the variable is informative only; it is the tokenizer post-processor's BOS.
  const TokenizerFix tok = fix_tokenizer(facts.tokenizer, "resources/tokenizer.json", facts.manifest.dims.vocab);
  const std::string& family = facts.manifest.model.model_type;

  ordered_json m;
  m["hef_h10h"] = sha256;
  m["template_params"] = {{"bos_token", tok.bos.value_or("")},
                          {"eos_token", eos_text},
                          {"chat_template", cfg[key::kChatTemplate].get<std::string>()}};
  m["generation_params"] = generation_params(cfg, stop_texts, cfg_file, notes);
  m["license"] = nullptr;
  m["system_prompt"] = nullptr;
  // ModelInfoDetails (dto/DTOs.hpp): shown by /api/tags and /api/show only.
  m["details"] = {{"parent_model", ""},
                  {"format", "hef"},
                  {"family", family},
                  {"families", ordered_json::array({family})},
                  {"parameter_size", parameter_size(facts.manifest.model.parameters)},
                  {"quantization_level", har::quantization_level(facts.plan ? &*facts.plan : nullptr)}};
  if (!facts.manifest.model.parameters)
    notes.push_back(facts.manifest_path +
                    " records no parameter count (an export older than this llm2hef): details.parameter_size left "
                    "empty; export again to fill it");
  if (facts.plan)
    notes.push_back("details.quantization_level from " + facts.plan->origin + ", the plan compile.py applies");
  return m;
}

}  // namespace llm2hef::core::package
