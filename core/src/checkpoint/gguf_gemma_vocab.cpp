// Gemma's SentencePiece vocabulary from a GGUF file, written as the model's
// own tokenizer.json has it.
//
// llama.cpp's converter (convert_hf_to_gguf.py) writes Gemma, Gemma 2 and
// Gemma 3 vocabularies with _set_vocab_sentencepiece (GemmaModel, Gemma2Model
// and Gemma3Model.set_vocab, each adding add_space_prefix = false). Its
// _create_vocab_sentencepiece takes every piece, score and type from
// tokenizer.model, then rewrites each token listed in tokenizer_config.json's
// added_tokens_decoder:
//   - `scores[token_id] = -1000.0`. SentencePiece had given these pieces (all
//     of them control or user-defined) the score 0, as it gives every piece
//     that is not learned (sentencepiece trainer_interface.cc, Serialize:
//     `set_score(0.0)` for meta pieces; the 256 byte pieces keep their 0 in the
//     GGUF). The merges recovered from the scores put a score-0 token's splits
//     first, so -1000 would move the merges that make Gemma's runs of spaces,
//     tabs and newlines below a thousand others ("  lead" would become
//     "\u2581", "\u2581lead" instead of "\u2581\u2581", "lead").
//   - a token not special becomes USER_DEFINED with every "\u2581" replaced by a
//     space ("pre-normalize user-defined spaces", for llama.cpp's own
//     tokenizer, which matches user-defined tokens in the raw text): Gemma's
//     "\u2581\u2581" ... (31 of them) are stored as runs of spaces.
//   - a token special, or one that looks special (does_token_look_special:
//     "<mask>", "<2mass>", "[@BOS@]" and "<unused...>", commented "gemma{,-2}"),
//     becomes CONTROL, though Gemma's tokenizer.json has those not special.
// The first two are undone here, on a copy of the metadata, before the
// SentencePiece writer of gguf_tokenizer.cpp reads it: its merges recovered
// from the scores (transformers' generate_merges) then equal, entry for entry,
// the 514,906 merges of Gemma 3's tokenizer.json (checked on the real 262,144
// pieces: tests/cli/gguf_input/test_gguf_gemma_vocab.py). The third only sets
// the "special" flag of added tokens, which decoding reads and encoding does
// not; it is undone for the tokens of that list.
//
// transformers' own GGUF loader (integrations/gguf/gguf_tokenizer_mapping.py,
// gemma_tokenizer) orders the merges by token position instead of score, which
// splits runs of more than 31 spaces differently from the real tokenizer.json;
// docs/gguf.md ("Gemma vocabularies") has the comparison.
#include "gguf_gemma_vocab.hpp"

#include "gguf/family.hpp"

#include <cstdint>
#include <string_view>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::gguf_gemma {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// gguf-py's TokenType (llama.cpp's llama_token_type).
constexpr int64_t kUnknown = 2, kControl = 3, kUserDefined = 4;
constexpr std::string_view kMetaspace = "\u2581";
// The score convert_hf_to_gguf.py gives every token of added_tokens_decoder.
constexpr double kAddedTokenScore = -1000.0;

// The architectures whose row says their vocabulary is Gemma's
// (Vocabulary::gemma: gguf/gemma.cpp), which transformers' GGUF loader reads
// as Gemma's tokenizer (GGUF_SENTENCEPIECE_BUILDERS) and llama.cpp's
// converter writes with add_space_prefix = false; gemma4 files name their
// own tokenizer model.
bool has_gemma_vocabulary(const gguf::Family& f) { return f.vocabulary == gguf::Vocabulary::gemma; }
bool gemma_architecture(const std::string& arch) {
  const gguf::Family* f = gguf::find_family(arch);
  return f && has_gemma_vocabulary(*f);
}

[[noreturn]] void fail(const std::string& origin, const std::string& key, const std::string& what) {
  throw BadInput(origin + ": metadata key '" + key + "': " + what);
}

std::string with_metaspace(const std::string& token) {
  std::string out;
  out.reserve(token.size());
  for (char c : token) {
    if (c == ' ')
      out += kMetaspace;
    else
      out += c;
  }
  return out;
}

// does_token_look_special's entries for Gemma (see the top of this file).
bool looks_special_to_the_converter(const std::string& token) {
  if (token == "<mask>" || token == "<2mass>" || token == "[@BOS@]") return true;
  return token.size() > 8 && token.rfind("<unused", 0) == 0 && token.back() == '>';
}

}  // namespace

std::optional<ordered_json> restored_metadata(const ordered_json& metadata, const std::string& origin) {
  if (!metadata.is_object()) return std::nullopt;  // gguf_tokenizer.cpp says what is wrong
  const auto arch_it = metadata.find("general.architecture");
  const std::string arch = arch_it != metadata.end() && arch_it->is_string() ? arch_it->get<std::string>() : "";
  if (!gemma_architecture(arch)) {
    if (arch.rfind("gemma", 0) == 0)
      fail(origin, "tokenizer.ggml.model",
           "'llama' (SentencePiece) vocabulary of architecture '" + arch + "': only " +
               gguf::family_names(has_gemma_vocabulary) +
               " vocabularies are written (checked against Gemma 3's tokenizer.json); put the model's "
               "tokenizer.json next to the .gguf");
    return std::nullopt;
  }
  ordered_json out = metadata;
  // Gemma's tokenizer adds no prefix space (GemmaTokenizer, GemmaConverter),
  // and every converter of Gemma writes false; a file saying true describes
  // some other tokenizer.
  const std::string prefix_key = "tokenizer.ggml.add_space_prefix";
  const auto prefix = out.find(prefix_key);
  if (prefix == out.end())
    out[prefix_key] = false;
  else if (prefix->is_boolean() && prefix->get<bool>())
    fail(origin, prefix_key,
         "true in a " + arch +
             " file: Gemma's tokenizer adds no prefix space (convert_hf_to_gguf.py writes false for Gemma); "
             "put the model's tokenizer.json next to the .gguf");

  // Anything malformed is left as it is, for gguf_tokenizer.cpp to refuse
  // with its own message.
  const auto types = out.find("tokenizer.ggml.token_type");
  const auto tokens = out.find("tokenizer.ggml.tokens");
  if (types == out.end() || !types->is_array()) return out;
  auto type_of = [&](size_t i) -> int64_t {
    const auto& t = (*types)[i];
    return t.is_number_integer() ? t.get<int64_t>() : 0;
  };
  if (tokens != out.end() && tokens->is_array() && tokens->size() == types->size())
    for (size_t i = 0; i < tokens->size(); ++i) {
      auto& t = (*tokens)[i];
      if (type_of(i) == kUserDefined && t.is_string() && t.get_ref<const std::string&>().find(' ') != std::string::npos)
        t = with_metaspace(t.get<std::string>());
    }
  const auto scores = out.find("tokenizer.ggml.scores");
  if (scores != out.end() && scores->is_array() && scores->size() == types->size())
    for (size_t i = 0; i < scores->size(); ++i) {
      auto& s = (*scores)[i];
      const int64_t type = type_of(i);
      if ((type == kControl || type == kUserDefined || type == kUnknown) && s.is_number() &&
          s.get<double>() == kAddedTokenScore)
        s = 0.0;
    }
  return out;
}

void apply_tokenizer_shape(json& tokenizer) {
  // GemmaConverter (transformers convert_slow_tokenizer.py) and GemmaTokenizer:
  // spaces become "\u2581" and nothing is prepended; the Split on " " finds no
  // space left after that normalizer, and is written as Gemma's files have it.
  tokenizer["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", std::string(kMetaspace)}};
  tokenizer["pre_tokenizer"] = {{"type", "Split"},
                                {"pattern", {{"String", " "}}},
                                {"behavior", "MergedWithPrevious"},
                                {"invert", false}};
  for (auto& added : tokenizer["added_tokens"])
    if (added["special"].get<bool>() && looks_special_to_the_converter(added["content"].get<std::string>()))
      added["special"] = false;
}

}  // namespace llm2hef::core::gguf_gemma
