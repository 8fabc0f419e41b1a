// libFuzzer target for what `llm2hef package` reads besides the HEF (issue
// 30, Fuzzing), in memory: the --model NAME[:TAG] text, and the export's
// resources/hailo-config.json and resources/tokenizer.json that the
// hailo-ollama manifest is built from (core/src/package/ollama_manifest.cpp).
//
// The input is up to five parts separated by kSeparator: the model
// reference, hailo-config.json, tokenizer.json, the export manifest's
// model_type, its vocabulary size (decimal). Every input must be accepted or
// refused with llm2hef::Error (UsageError, BadInput); anything else (raw
// nlohmann text, a sanitizer report) is a bug.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llm2hef/core/package/package.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

using namespace llm2hef;

namespace {

constexpr std::string_view kSeparator = "\n@@@@\n";
constexpr size_t kParts = 5;

std::array<std::string, kParts> split(std::string_view in) {
  std::array<std::string, kParts> parts{};
  for (size_t i = 0; i < kParts; ++i) {
    const size_t at = i + 1 < kParts ? in.find(kSeparator) : std::string_view::npos;
    parts[i] = std::string(in.substr(0, at));
    if (at == std::string_view::npos) break;
    in.remove_prefix(at + kSeparator.size());
  }
  return parts;
}

int64_t vocab_of(const std::string& text) {
  int64_t v = 0;
  for (char c : text.substr(0, 9))
    if (c >= '0' && c <= '9') v = v * 10 + (c - '0');
  return v == 0 ? 50257 : v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = split(std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    (void)core::package::parse_model_ref(parts[0]);
  } catch (const Error&) {
  }
  try {
    core::package::ExportFacts facts;
    facts.manifest_path = "OUT/manifest.json";
    // In a real run model_type comes from a parsed manifest.json, so it is
    // valid UTF-8; kept to printable ASCII here so that the target does not
    // report its own raw bytes.
    for (char c : parts[3].substr(0, 64))
      if (c >= ' ' && c <= '~') facts.manifest.model.model_type += c;
    facts.manifest.dims.vocab = vocab_of(parts[4]);
    facts.hailo_config = sdk::parse_json(parts[1], "resources/hailo-config.json", sdk::JsonLimits::small_file());
    facts.tokenizer = sdk::parse_json(parts[2], "resources/tokenizer.json", sdk::JsonLimits::small_file());
    std::vector<std::string> notes;
    (void)core::package::make_ollama_manifest(facts, std::string(64, 'a'), notes).dump();
  } catch (const Error&) {
  }
  return 0;
}
