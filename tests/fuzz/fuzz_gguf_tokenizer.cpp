// libFuzzer target for core::gguf_tokenizer_files: GGUF tokenizer metadata
// (as GgufFile::metadata() gives it, here parsed from JSON text) to
// tokenizer.json and tokenizer_config.json. The metadata comes from an
// untrusted file, so any input must either be refused with BadInput or give
// two documents that serialize. Anything else (another exception, a sanitizer
// report) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "llm2hef/core/checkpoint/gguf_tokenizer.hpp"
#include "llm2hef/sdk/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto metadata = nlohmann::ordered_json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (metadata.is_discarded()) return 0;
  try {
    const auto files = llm2hef::core::gguf_tokenizer_files(metadata, "fuzz.gguf");
    (void)files.tokenizer_json.dump();
    (void)files.tokenizer_config.dump();
  } catch (const llm2hef::BadInput&) {
  }
  return 0;
}
