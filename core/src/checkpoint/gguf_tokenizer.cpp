// tokenizer.json and tokenizer_config.json from a GGUF file's tokenizer.* metadata.
//
// A GGUF carries no tokenizer.json: llama.cpp's converter (convert_hf_to_gguf.py)
// stores the vocabulary, the merges, per-token types and the special-token ids,
// and names the way text is split before BPE with one word, `tokenizer.ggml.pre`.
// Which split each word means is llama.cpp's own table (src/llama-vocab.cpp,
// llm_tokenizer_bpe and the `tokenizer_pre ==` chain in llama_vocab::impl::load),
// which quotes the regexes of the original tokenizer.json files; transformers'
// GGUF loader (integrations/gguf/gguf_tokenizer_mapping.py) builds the same
// tokenizers. Only the `pre` values whose original Hugging Face pre-tokenizer is
// known exactly are written; anything else is refused rather than approximated.
// docs/gguf-tokenizer.md lists what is written and why.
#include "llm2hef/core/checkpoint/gguf_tokenizer.hpp"

#include "gguf_gemma_vocab.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "llm2hef/core/checkpoint/chat_template.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::core {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// llama.cpp's llama_token_type (gguf-py constants.py TokenType).
enum TokenType : int64_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

constexpr std::string_view kMetaspace = "\u2581";  // SentencePiece's visible space

// How one `tokenizer.ggml.pre` value splits text, in tokenizers' JSON.
struct ByteLevelSplit {
  json normalizer;     // null or a normalizer
  json pre_tokenizer;  // the whole pre_tokenizer
  bool ignore_merges;  // llama.cpp's ignore_merges: a word already in the vocab is one token
  bool add_bos;        // llama.cpp's default when tokenizer.ggml.add_bos_token is absent
  bool trim_offsets;
};

json byte_level(bool trim_offsets, bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", trim_offsets}, {"use_regex", use_regex}};
}

json isolated_split(const std::string& regex) {
  return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
}

// The regexes are the originals from the models' tokenizer.json, which
// llama-vocab.cpp quotes in a comment above its own (case-expanded) spelling.
// Meta Llama 3: tokenizer.json of meta-llama/Meta-Llama-3-8B, also
// transformers' _LLAMA3_SPLIT.
const char* const kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2 (and Qwen2.5, Qwen3): transformers' qwen2 PRETOKENIZE_REGEX; one digit per piece.
const char* const kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::optional<ByteLevelSplit> byte_level_split(const std::string& pre) {
  // llama-vocab.cpp: "llama3" / "llama-v3" / "llama-bpe" -> LLAMA3, with
  // ignore_merges = true and add_bos = true.
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3")
    return ByteLevelSplit{nullptr,
                          {{"type", "Sequence"},
                           {"pretokenizers", json::array({isolated_split(kLlama3Regex), byte_level(true, false)})}},
                          true,
                          true,
                          true};
  // "smaug-bpe" -> SMAUG. convert_hf_to_gguf.py (get_vocab_base_pre) writes
  // this label for the hash c136ed14..., which is what Meta's first Llama 3
  // tokenizer.json gives (the one without a BOS post-processor; with it the
  // hash is llama-bpe's 0ef9807a...). llama.cpp splits it with the Llama 3
  // regex ("same as llama3", llm_tokenizer_bpe) and, unlike "llama-bpe",
  // adds no BOS by default. It leaves ignore_merges unset, where that
  // tokenizer.json sets it: 588 of Llama 3's words (" việc", " hợp") are one
  // token there and in tiktoken, several in llama.cpp. The original's rule is
  // written, as for every other label (docs/gguf-tokenizer.md).
  if (pre == "smaug-bpe")
    return ByteLevelSplit{nullptr,
                          {{"type", "Sequence"},
                           {"pretokenizers", json::array({isolated_split(kLlama3Regex), byte_level(true, false)})}},
                          true,
                          false,
                          true};
  // "qwen2" -> QWEN2. Qwen2's tokenizer.json (and transformers' Qwen2Tokenizer)
  // also normalizes to NFC, which llama.cpp leaves out; the original is written.
  if (pre == "qwen2")
    return ByteLevelSplit{{{"type", "NFC"}},
                          {{"type", "Sequence"},
                           {"pretokenizers", json::array({isolated_split(kQwen2Regex), byte_level(false, false)})}},
                          false,
                          false,
                          false};
  // "smollm" -> SMOLLM: the regexes {"\p{N}", GPT-2's}, i.e. every digit on its
  // own, then GPT-2's byte-level split: tokenizers' Digits(individual_digits)
  // followed by ByteLevel(use_regex), as in HuggingFaceTB/SmolLM's tokenizer.json.
  if (pre == "smollm")
    return ByteLevelSplit{nullptr,
                          {{"type", "Sequence"},
                           {"pretokenizers",
                            json::array({{{"type", "Digits"}, {"individual_digits", true}}, byte_level(true, true)})}},
                          false,
                          false,
                          true};
  // "gpt-2" -> GPT2: GPT-2's own regex, which ByteLevel(use_regex) applies.
  if (pre == "gpt-2") return ByteLevelSplit{nullptr, byte_level(true, true), false, false, true};
  return std::nullopt;
}

constexpr const char* kSupportedPre = "llama-bpe, llama3, llama-v3, smaug-bpe, qwen2, smollm, gpt-2";

// What works when the metadata cannot give the tokenizer: a folder holding
// the .gguf and the model's own files is read with those files
// (GgufCheckpoint::setup_tokenizer; docs/gguf.md). A tokenizer.json beside a
// .gguf named as a file is not looked for, so the advice names the folder.
constexpr const char* kUseTokenizerJson =
    "put the model's tokenizer.json (and tokenizer_config.json) in a folder with the .gguf and give llm2hef that "
    "folder (docs/gguf.md)";

// Reads tokenizer.* keys, every failure naming the file and the key.
class Metadata {
 public:
  Metadata(const ordered_json& metadata, const std::string& origin) : md_(metadata), origin_(origin) {
    if (!md_.is_object()) throw BadInput(origin_ + ": GGUF metadata is not a key-value map");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw BadInput(origin_ + ": metadata key '" + key + "': " + what);
  }

  const ordered_json* find(const std::string& key) const {
    auto it = md_.find(key);
    return it == md_.end() ? nullptr : &*it;
  }

  std::optional<std::string> string(const std::string& key) const {
    const ordered_json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(key, "expected a string");
    return v->get<std::string>();
  }

  bool flag(const std::string& key, bool fallback) const {
    const ordered_json* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(key, "expected a bool");
    return v->get<bool>();
  }

  // A token id, checked against the vocabulary size.
  std::optional<int64_t> token_id(const std::string& key, size_t n_tokens) const {
    const ordered_json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) fail(key, "expected an integer token id");
    // uint32 in the file; a negative id in JSON form means none
    if (v->is_number_unsigned()) {
      const uint64_t id = v->get<uint64_t>();
      if (id >= n_tokens)
        fail(key, "token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(n_tokens) +
                      " tokens");
      return static_cast<int64_t>(id);
    }
    const int64_t id = v->get<int64_t>();
    if (id < 0 || static_cast<uint64_t>(id) >= n_tokens)
      fail(key,
           "token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(n_tokens) + " tokens");
    return id;
  }

  std::vector<std::string> strings(const std::string& key) const {
    const ordered_json* v = find(key);
    if (!v) fail(key, "missing");
    if (!v->is_array()) fail(key, "expected an array of strings");
    std::vector<std::string> out;
    out.reserve(v->size());
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string()) fail(key, "entry " + std::to_string(i) + " is not a string");
      out.push_back((*v)[i].get<std::string>());
    }
    return out;
  }

  template <class T>
  std::vector<T> numbers(const std::string& key, size_t expected_size) const {
    const ordered_json* v = find(key);
    if (!v) fail(key, "missing");
    if (!v->is_array()) fail(key, "expected an array of numbers");
    if (v->size() != expected_size)
      fail(key, "has " + std::to_string(v->size()) + " entries for " + std::to_string(expected_size) + " tokens");
    std::vector<T> out;
    out.reserve(v->size());
    for (size_t i = 0; i < v->size(); ++i) {
      const auto& e = (*v)[i];
      if constexpr (std::is_integral_v<T>) {
        if (!e.is_number_integer()) fail(key, "entry " + std::to_string(i) + " is not an integer");
      } else {
        if (!e.is_number()) fail(key, "entry " + std::to_string(i) + " is not a number");
      }
      out.push_back(e.get<T>());
    }
    return out;
  }

 private:
  const ordered_json& md_;
  const std::string& origin_;
};

// Code points of a UTF-8 string, as byte offsets (Python's str indexing,
// which transformers' merge recovery slices by). Invalid UTF-8 is refused by
// the caller before this is reached.
std::vector<size_t> code_point_starts(const std::string& s) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) starts.push_back(i);
  return starts;
}

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

struct Vocabulary {
  std::vector<std::string> tokens;
  std::vector<int64_t> types;
};

json added_token(int64_t id, const std::string& content, bool special) {
  // normalized false: llama.cpp matches CONTROL and USER_DEFINED tokens in the
  // raw text (convert_hf_to_gguf.py stores them pre-normalized).
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

json bpe_model(json vocab, json merges, bool ignore_merges, bool byte_fallback, bool fuse_unk, json unk_token) {
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", std::move(unk_token)},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", fuse_unk},
          {"byte_fallback", byte_fallback},
          {"ignore_merges", ignore_merges},
          {"vocab", std::move(vocab)},
          {"merges", std::move(merges)}};
}

// tokenizer.ggml.merges: "left right", split at the first space after the
// first byte (llama-vocab.cpp reads them the same way).
json file_merges(const Metadata& md, const std::vector<std::string>& merges,
                 const std::unordered_map<std::string, int64_t>& vocab) {
  const std::string key = "tokenizer.ggml.merges";
  json out = json::array();
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (space == std::string::npos || space + 1 >= m.size() || m.find(' ', space + 1) != std::string::npos)
      md.fail(key, "entry " + std::to_string(i) + " '" + m + "' is not two tokens separated by one space");
    std::string left = m.substr(0, space), right = m.substr(space + 1);
    // tokenizers refuses to load a BPE whose merges name tokens it does not
    // have; say so here, naming the merge, instead of at the runtime.
    for (const std::string* t : {&left, &right})
      if (!vocab.count(*t))
        md.fail(key, "entry " + std::to_string(i) + " '" + m + "' uses '" + *t + "', which is not in the vocabulary");
    if (!vocab.count(left + right))
      md.fail(key, "entry " + std::to_string(i) + " '" + m + "' makes '" + left + right +
                       "', which is not in the vocabulary");
    out.push_back(json::array({std::move(left), std::move(right)}));
  }
  return out;
}

// Polynomial hashes of byte strings modulo the Mersenne prime 2^61 - 1, so
// that every split of a token can be looked up in the vocabulary in constant
// time (hashing each half anew would make a token of L bytes cost L^2). The
// base is drawn per run, so no vocabulary can be made to collide on purpose;
// a hash hit is compared byte by byte before it is used.
__extension__ using u128 = unsigned __int128;  // GCC and clang, on every 64-bit target

class SubstringHashes {
 public:
  explicit SubstringHashes(uint64_t base) : base_(base) {}

  // x mod 2^61 - 1 for x < 2^122 + 2^61, as the one value in [0, 2^61 - 1)
  // (equal strings must get equal hashes however they were computed).
  static uint64_t reduce(u128 x) {
    uint64_t v = static_cast<uint64_t>(x & kMod) + static_cast<uint64_t>(x >> 61);  // < 2^62
    v = (v & kMod) + (v >> 61);                                                     // <= 2^61
    return v >= kMod ? v - kMod : v;
  }
  uint64_t of(std::string_view s) const {
    uint64_t h = 0;
    for (unsigned char c : s) h = reduce(static_cast<u128>(h) * base_ + c + 1);
    return h;
  }
  // prefix_[i] = hash of s[0, i); power_[i] = base^i.
  void index(std::string_view s) {
    prefix_.assign(s.size() + 1, 0);
    while (power_.size() <= s.size())
      power_.push_back(power_.empty() ? 1 : reduce(static_cast<u128>(power_.back()) * base_));
    for (size_t i = 0; i < s.size(); ++i)
      prefix_[i + 1] = reduce(static_cast<u128>(prefix_[i]) * base_ + static_cast<unsigned char>(s[i]) + 1);
  }
  uint64_t prefix(size_t n) const { return prefix_[n]; }
  uint64_t suffix(size_t from) const {  // of s[from, end)
    const size_t n = prefix_.size() - 1;
    const uint64_t shifted = reduce(static_cast<u128>(prefix_[from]) * power_[n - from]);
    return prefix_[n] >= shifted ? prefix_[n] - shifted : prefix_[n] + kMod - shifted;
  }

 private:
  static constexpr uint64_t kMod = (uint64_t{1} << 61) - 1;
  uint64_t base_;
  std::vector<uint64_t> prefix_, power_;
};

// Bounds on the merges recovered from a SentencePiece vocabulary, checked as
// they are found, before they are built: a vocabulary of nested tokens ("a",
// "aa", "aaa", ...) implies merges quadratic in its size, and their text
// cubic (4 MB of such tokens asked for 8 GB). The text bound is what lets
// tokenizer.json be read back (sdk::JsonLimits::kTokenizerBytes); the count,
// 2^21, is 34 times Llama 2's 61,249 merges.
constexpr size_t kMaxRecoveredMerges = size_t{1} << 21;
constexpr size_t kMaxRecoveredMergeBytes = sdk::JsonLimits::kTokenizerBytes;

// The merges of a SentencePiece vocabulary without tokenizer.ggml.merges
// come from its scores, so the scores must order the pieces that can be
// merged (NORMAL pieces of two code points or more). llama.cpp's converter
// writes -1000 for every piece when the Hugging Face folder has no
// tokenizer.model (_set_vocab_llama_hf, gguf-py vocab.py
// LlamaHfVocab.get_token_score: "Default score"), and writes no merges: the
// order is gone, and merges recovered by length alone encode text
// differently from the model's tokenizer.
void require_ordered_scores(const Metadata& md, const std::vector<std::string>& tokens,
                            const std::vector<int64_t>& types, const std::vector<float>& scores) {
  std::optional<float> first;
  size_t mergeable = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (types[i] != kNormal || code_point_starts(tokens[i]).size() < 2) continue;
    ++mergeable;
    if (!first) first = scores[i];
    if (scores[i] != *first) return;
  }
  if (mergeable < 2) return;
  char score[32];
  std::snprintf(score, sizeof score, "%g", static_cast<double>(*first));
  md.fail("tokenizer.ggml.scores",
          "all " + std::to_string(mergeable) + " pieces that merges can make have the score " + score +
              ", so the order of the merges is not in the file (llama.cpp's converter writes -1000 for every piece "
              "when the model's folder has no tokenizer.model, and no tokenizer.ggml.merges); merges recovered "
              "from it would encode text differently from the model's tokenizer: " +
              kUseTokenizerJson);
}

// Merges a SentencePiece vocabulary implies, recovered exactly as transformers
// does (tokenization_utils_base.generate_merges, which LlamaConverter and the
// GGUF loader use): every split of every token into two vocabulary tokens,
// ordered by the token's score, best first, then by the lengths of the two
// halves in code points, longest first; Python's stable sort keeps the token
// order (and, within a token, the order of the halves' ids) among equals.
// Time linear in the vocabulary's bytes plus the merges found.
json recovered_merges(const Metadata& md, const std::vector<std::string>& tokens, const std::vector<float>& scores,
                      const std::unordered_map<std::string, int64_t>& vocab) {
  struct Merge {
    float score;
    uint32_t left_len, right_len;  // code points
    uint32_t left_id, right_id;    // the vocabulary has at most 2^24 tokens (kMaxGgufArrayElements)
  };
  std::random_device seed;
  const uint64_t base = (uint64_t{seed()} << 32 | seed()) % ((uint64_t{1} << 61) - 257) + 256;
  SubstringHashes hashes(base);
  // Vocabulary tokens by hash (Python dicts keep the last id of a repeated
  // token; the caller refuses repeats, so each text has one id).
  std::unordered_multimap<uint64_t, int64_t> by_hash;
  by_hash.reserve(vocab.size());
  for (const auto& [text, id] : vocab) by_hash.emplace(hashes.of(text), id);
  auto find = [&](uint64_t h, std::string_view text) -> int64_t {
    auto [b, e] = by_hash.equal_range(h);
    for (auto it = b; it != e; ++it)
      if (tokens[static_cast<size_t>(it->second)] == text) return it->second;
    return -1;
  };

  std::vector<Merge> merges;
  size_t text_bytes = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& tok = tokens[t];
    const auto starts = code_point_starts(tok);
    hashes.index(tok);
    const size_t first = merges.size();
    for (size_t k = 1; k < starts.size(); ++k) {
      const std::string_view view(tok);
      // Both halves' hashes first: comparing the bytes of a half whose other
      // half is not a token would cost its length for nothing.
      if (!by_hash.count(hashes.prefix(starts[k])) || !by_hash.count(hashes.suffix(starts[k]))) continue;
      const int64_t l = find(hashes.prefix(starts[k]), view.substr(0, starts[k]));
      const int64_t r = find(hashes.suffix(starts[k]), view.substr(starts[k]));
      if (l < 0 || r < 0) continue;
      text_bytes += tok.size() + 7;  // ["left","right"], at least
      if (merges.size() == kMaxRecoveredMerges || text_bytes > kMaxRecoveredMergeBytes)
        md.fail("tokenizer.ggml.tokens",
                "the merges this SentencePiece vocabulary implies (every split of a token into two tokens, recovered "
                "as transformers does) exceed " +
                    std::string(merges.size() == kMaxRecoveredMerges ? std::to_string(kMaxRecoveredMerges) + " merges"
                                                                     : std::to_string(kMaxRecoveredMergeBytes >> 20) +
                                                                           " MiB of text (the tokenizer.json limit)") +
                    " by token " + std::to_string(t) + "; no real vocabulary comes near (docs/gguf-tokenizer.md)");
      merges.push_back({scores[t], static_cast<uint32_t>(k), static_cast<uint32_t>(starts.size() - k),
                        static_cast<uint32_t>(l), static_cast<uint32_t>(r)});
    }
    std::stable_sort(merges.begin() + static_cast<std::ptrdiff_t>(first), merges.end(),
                     [](const Merge& a, const Merge& b) {
                       return a.left_id != b.left_id ? a.left_id < b.left_id : a.right_id < b.right_id;
                     });
  }
  // sorted(key=(score, len_l, len_r), reverse=True) is stable: equal keys keep
  // their order, so reverse the key comparison only.
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.left_len != b.left_len) return a.left_len > b.left_len;
    return a.right_len > b.right_len;
  });
  json out = json::array();
  for (const Merge& m : merges) out.push_back(json::array({tokens[m.left_id], tokens[m.right_id]}));
  return out;
}

json template_processing(const std::optional<std::string>& bos, int64_t bos_id, const std::optional<std::string>& eos,
                         int64_t eos_id) {
  // transformers' update_post_processor: "<bos>:0 $A:0 <eos>:0" and the pair
  // form "... <bos>:1 $B:1 <eos>:1", for whichever of the two is added.
  auto special = [](const std::string& t, int type_id) {
    return json{{"SpecialToken", {{"id", t}, {"type_id", type_id}}}};
  };
  auto sequence = [](const char* s, int type_id) { return json{{"Sequence", {{"id", s}, {"type_id", type_id}}}}; };
  json single = json::array(), pair = json::array(), tokens = json::object();
  for (int part = 0; part < 2; ++part) {
    json& out = part == 0 ? single : pair;
    if (part == 1) out = single;
    if (bos) out.push_back(special(*bos, part));
    out.push_back(sequence(part == 0 ? "A" : "B", part));
    if (eos) out.push_back(special(*eos, part));
  }
  if (bos) tokens[*bos] = {{"id", *bos}, {"ids", json::array({bos_id})}, {"tokens", json::array({*bos})}};
  if (eos) tokens[*eos] = {{"id", *eos}, {"ids", json::array({eos_id})}, {"tokens", json::array({*eos})}};
  return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", tokens}};
}

// The vocabulary as tokenizer.json holds it: model.vocab, the added tokens,
// and the ids by text that the merges are checked against.
struct VocabularyJson {
  Vocabulary v;
  std::unordered_map<std::string, int64_t> ids;  // tokens in model.vocab
  json vocab = json::object();
  json added = json::array();
};

VocabularyJson read_vocabulary(const Metadata& md, bool sentencepiece) {
  VocabularyJson out;
  Vocabulary& v = out.v;
  v.tokens = md.strings("tokenizer.ggml.tokens");
  if (v.tokens.empty()) md.fail("tokenizer.ggml.tokens", "empty");
  // Without types nothing says which tokens are special (matched whole in the
  // text, skipped when decoding); guessing would change the encodings.
  if (!md.find("tokenizer.ggml.token_type"))
    md.fail("tokenizer.ggml.token_type", "missing: which tokens are special cannot be told");
  v.types = md.numbers<int64_t>("tokenizer.ggml.token_type", v.tokens.size());

  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const std::string& tok = v.tokens[i];
    const auto id = static_cast<int64_t>(i);
    const int64_t type = v.types[i];
    if (type < kNormal || type > kByte)
      md.fail("tokenizer.ggml.token_type", "token " + std::to_string(i) + " has unknown type " + std::to_string(type));
    if (!valid_utf8(tok)) md.fail("tokenizer.ggml.tokens", "token " + std::to_string(i) + " is not UTF-8");
    if (tok.empty()) md.fail("tokenizer.ggml.tokens", "token " + std::to_string(i) + " is empty");
    // CONTROL: special tokens; USER_DEFINED: added tokens that are not special
    // (convert_hf_to_gguf.py's get_vocab_base, and transformers' reading of them).
    if (type == kControl || type == kUserDefined || (sentencepiece && type == kUnknown))
      out.added.push_back(added_token(id, tok, type != kUserDefined));
    // Added tokens are in model.vocab too: tokenizers gives an added token
    // that the model lacks a fresh id past the vocabulary, whatever its "id"
    // says, which would move SmolLM2's <|im_start|> from 1 to 49136. (They
    // are split out of the text before the model sees it, so no word can hit
    // them there.) UNUSED entries of a byte-level vocabulary are the
    // converter's "[PAD<id>]" fillers for ids the tokenizer never had; a
    // SentencePiece vocabulary keeps every piece, as LlamaConverter writes it.
    const bool in_vocab = sentencepiece || type != kUnused;
    if (!in_vocab) continue;
    if (!out.ids.emplace(tok, id).second)
      md.fail("tokenizer.ggml.tokens", "token " + std::to_string(i) + " '" + tok + "' repeats token " +
                                           std::to_string(out.ids[tok]) +
                                           " (a tokenizer.json vocabulary maps each text to one id)");
    out.vocab[tok] = id;
  }
  return out;
}

// What the two kinds of vocabulary write differently: how text is split and
// decoded, and whether BOS is added by default.
struct TokenizerShape {
  bool add_bos = false;
  json decoder;
  json post_steps = json::array();
};

// A byte-level BPE (tokenizer.ggml.model "gpt2"): the split named by
// tokenizer.ggml.pre, and the file's merges.
TokenizerShape write_byte_level(const Metadata& md, VocabularyJson& vj, json& tokenizer) {
  TokenizerShape shape;
  const std::optional<std::string> pre = md.string("tokenizer.ggml.pre");
  if (!pre)
    md.fail("tokenizer.ggml.pre",
            "missing: the file does not say how text is split before BPE (llama.cpp falls back to a split of "
            "its own and warns that generation quality will be degraded); supported: " +
                std::string(kSupportedPre));
  const auto split = byte_level_split(*pre);
  if (!split)
    md.fail("tokenizer.ggml.pre",
            "'" + *pre + "' is not a pre-tokenizer llm2hef can write exactly (supported: " + kSupportedPre + ")");
  // llama.cpp refuses a byte-level vocabulary without merges too
  // (llama_vocab::impl::load: "cannot find tokenizer merges in model file").
  if (!md.find("tokenizer.ggml.merges"))
    md.fail("tokenizer.ggml.merges",
            std::string("missing: a byte-level BPE vocabulary cannot be rebuilt without its merges; ") +
                kUseTokenizerJson);
  const json merges = file_merges(md, md.strings("tokenizer.ggml.merges"), vj.ids);
  shape.add_bos = md.flag("tokenizer.ggml.add_bos_token", split->add_bos);
  tokenizer["normalizer"] = split->normalizer;
  tokenizer["pre_tokenizer"] = split->pre_tokenizer;
  tokenizer["model"] = bpe_model(std::move(vj.vocab), merges, split->ignore_merges, false, false, nullptr);
  shape.decoder = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  shape.post_steps.push_back(byte_level(false, false));
  return shape;
}

// The number of BYTE tokens: 0, or all 256 "<0xNN>" pieces, which stand in
// for any character the vocabulary lacks (byte fallback). A partial set could
// not encode every text.
size_t byte_fallback_tokens(const Metadata& md, const VocabularyJson& vj) {
  const Vocabulary& v = vj.v;
  size_t bytes = 0;
  for (size_t i = 0; i < v.tokens.size(); ++i) bytes += v.types[i] == kByte;
  if (bytes != 0 && bytes != 256)
    md.fail("tokenizer.ggml.token_type", std::to_string(bytes) + " BYTE tokens (byte fallback needs all 256)");
  for (size_t b = 0; b < 256 && bytes; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned>(b));
    auto it = vj.ids.find(name);
    if (it == vj.ids.end() || v.types[static_cast<size_t>(it->second)] != kByte)
      md.fail("tokenizer.ggml.tokens", std::string("byte token ") + name + " is missing");
  }
  return bytes;
}

// SentencePiece BPE as transformers writes it for Llama-2-style files.
// The prefix space comes from a Prepend normalizer, applied to every piece
// of text between added tokens: llama.cpp's SPM tokenizer adds it after
// every special token too (llama_tokenize_impl, is_prev_special), and the
// original Llama 2 / Mistral tokenizer.json files are written this way.
TokenizerShape write_sentencepiece(const Metadata& md, VocabularyJson& vj, const std::optional<std::string>& unk,
                                   json& tokenizer) {
  TokenizerShape shape;
  if (md.flag("tokenizer.ggml.remove_extra_whitespaces", false))
    md.fail("tokenizer.ggml.remove_extra_whitespaces",
            "true: SentencePiece's whitespace folding has no tokenizer.json equivalent written here");
  if (md.find("tokenizer.ggml.precompiled_charsmap"))
    md.fail("tokenizer.ggml.precompiled_charsmap", "present: SentencePiece normalization maps are not written");
  const bool add_space_prefix = md.flag("tokenizer.ggml.add_space_prefix", true);
  const auto scores = md.numbers<float>("tokenizer.ggml.scores", vj.v.tokens.size());
  const size_t bytes = byte_fallback_tokens(md, vj);
  const bool has_merges = md.find("tokenizer.ggml.merges") != nullptr;
  if (!has_merges) require_ordered_scores(md, vj.v.tokens, vj.v.types, scores);
  const json merges = has_merges ? file_merges(md, md.strings("tokenizer.ggml.merges"), vj.ids)
                                 : recovered_merges(md, vj.v.tokens, scores, vj.ids);
  // llama.cpp adds BOS to SentencePiece vocabularies unless the file says
  // otherwise (llama_vocab::impl::load, "llama" model defaults); so does transformers.
  shape.add_bos = md.flag("tokenizer.ggml.add_bos_token", true);
  json norm = json::array();
  if (add_space_prefix) norm.push_back({{"type", "Prepend"}, {"prepend", std::string(kMetaspace)}});
  norm.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", std::string(kMetaspace)}});
  tokenizer["normalizer"] = {{"type", "Sequence"}, {"normalizers", norm}};
  tokenizer["pre_tokenizer"] = nullptr;
  tokenizer["model"] =
      bpe_model(std::move(vj.vocab), merges, false, bytes == 256, true, unk ? json(*unk) : json(nullptr));
  json steps = json::array({{{"type", "Replace"}, {"pattern", {{"String", std::string(kMetaspace)}}}, {"content", " "}},
                            {{"type", "ByteFallback"}},
                            {{"type", "Fuse"}}});
  if (add_space_prefix) steps.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  shape.decoder = {{"type", "Sequence"}, {"decoders", steps}};
  return shape;
}

// tokenizer.chat_template, plus named ones as tokenizer.chat_template.<name>
// (gguf-py's Keys.Tokenizer.CHAT_TEMPLATE_N): one string, or transformers'
// list of {"name", "template"} with the unnamed one as "default".
void write_chat_templates(const Metadata& md, const ordered_json& metadata, json& config) {
  const std::string tmpl_key = "tokenizer.chat_template";
  // The template goes into hailo-config.json (JSON) and through the template
  // edits: UTF-8 text, bounded as a template file is.
  auto template_text = [&](const std::string& key, const std::string& text) {
    if (text.size() > kMaxChatTemplateBytes)
      md.fail(key, std::to_string(text.size()) + " bytes exceed the limit of " + std::to_string(kMaxChatTemplateBytes) +
                       " bytes (4 MiB) for a chat template");
    if (!valid_utf8(text)) md.fail(key, "the chat template is not UTF-8 text");
    return text;
  };
  json named = json::array();
  for (const auto& [key, value] : metadata.items()) {
    if (key.rfind(tmpl_key + ".", 0) != 0) continue;
    if (!value.is_string()) md.fail(key, "expected a string");
    named.push_back(
        {{"name", key.substr(tmpl_key.size() + 1)}, {"template", template_text(key, value.get<std::string>())}});
  }
  if (const auto tmpl = md.string(tmpl_key)) {
    template_text(tmpl_key, *tmpl);
    if (named.empty()) {
      config["chat_template"] = *tmpl;
    } else {
      named.insert(named.begin(), json{{"name", "default"}, {"template", *tmpl}});
      config["chat_template"] = named;
    }
  } else if (!named.empty()) {
    config["chat_template"] = named;
  }
}

}  // namespace

GgufTokenizerFiles gguf_tokenizer_files(const ordered_json& raw_metadata, const std::string& origin) {
  const Metadata raw(raw_metadata, origin);
  const std::optional<std::string> model = raw.string("tokenizer.ggml.model");
  if (!model) raw.fail("tokenizer.ggml.model", "missing: the file carries no tokenizer");
  const bool sentencepiece = *model == "llama";
  // Gemma's SentencePiece vocabularies, with what the converter changed in
  // them undone (gguf_gemma_vocab.cpp); the rest reads them as any other.
  const std::optional<ordered_json> gemma =
      sentencepiece ? gguf_gemma::restored_metadata(raw_metadata, origin) : std::nullopt;
  const ordered_json& metadata = gemma ? *gemma : raw_metadata;
  const Metadata md(metadata, origin);
  if (*model != "gpt2" && !sentencepiece)
    md.fail("tokenizer.ggml.model", "'" + *model +
                                        "' vocabularies are not supported (supported: gpt2, a byte-level BPE; "
                                        "llama, a SentencePiece BPE)");

  VocabularyJson vj = read_vocabulary(md, sentencepiece);
  const std::vector<std::string>& tokens = vj.v.tokens;
  const size_t n = tokens.size();
  const auto bos_id = md.token_id("tokenizer.ggml.bos_token_id", n);
  const auto eos_id = md.token_id("tokenizer.ggml.eos_token_id", n);
  const auto unk_id = md.token_id("tokenizer.ggml.unknown_token_id", n);
  const auto pad_id = md.token_id("tokenizer.ggml.padding_token_id", n);
  auto text_of = [&](const std::optional<int64_t>& id) -> std::optional<std::string> {
    if (!id) return std::nullopt;
    return tokens[static_cast<size_t>(*id)];
  };

  json tokenizer = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}};
  json added = std::move(vj.added);
  TokenizerShape shape =
      sentencepiece ? write_sentencepiece(md, vj, text_of(unk_id), tokenizer) : write_byte_level(md, vj, tokenizer);
  const bool add_bos = shape.add_bos;
  const bool add_eos = md.flag("tokenizer.ggml.add_eos_token", false);
  if (add_bos && !bos_id) md.fail("tokenizer.ggml.bos_token_id", "missing, but a BOS token is to be added");
  if (add_eos && !eos_id) md.fail("tokenizer.ggml.eos_token_id", "missing, but an EOS token is to be added");
  json& post_steps = shape.post_steps;
  if (add_bos || add_eos)
    post_steps.push_back(template_processing(add_bos ? text_of(bos_id) : std::nullopt, bos_id.value_or(0),
                                             add_eos ? text_of(eos_id) : std::nullopt, eos_id.value_or(0)));
  tokenizer["post_processor"] = post_steps.empty()       ? json(nullptr)
                                : post_steps.size() == 1 ? post_steps[0]
                                                         : json{{"type", "Sequence"}, {"processors", post_steps}};
  tokenizer["decoder"] = shape.decoder;
  tokenizer["added_tokens"] = std::move(added);
  if (gemma) gguf_gemma::apply_tokenizer_shape(tokenizer);

  json config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                 {"add_bos_token", add_bos},
                 {"add_eos_token", add_eos},
                 {"clean_up_tokenization_spaces", false}};
  const std::pair<const char*, const std::optional<int64_t>*> specials[] = {{"bos_token", &bos_id},
                                                                            {"eos_token", &eos_id},
                                                                            {"unk_token", &unk_id},
                                                                            {"pad_token", &pad_id}};
  for (const auto& [name, id] : specials) config[name] = *id ? json(*text_of(*id)) : json(nullptr);
  write_chat_templates(md, metadata, config);
  return {std::move(tokenizer), std::move(config)};
}

}  // namespace llm2hef::core
