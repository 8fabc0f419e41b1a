// Test driver for core::gguf_tokenizer_files: reads GGUF metadata written as
// JSON (key -> value, as gguf-py reads it), or a .gguf file's own (read by
// core::GgufFile, as export reads it: gguf-py takes 20 s over Gemma 3's
// 262,144 tokens), and writes the tokenizer.json and
// tokenizer_config.json llm2hef makes of it, so that tests/cli/gguf_input/test_gguf_tokenizer.py
// can encode text with them through the `tokenizers` package. Exit 3 with the
// message on refusal, as llm2hef does.
#include <fstream>
#include <iostream>
#include <sstream>

#include "llm2hef/core/checkpoint/gguf_file.hpp"
#include "llm2hef/core/checkpoint/gguf_tokenizer.hpp"
#include "llm2hef/sdk/errors.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: gguf_tokenizer_probe METADATA.json OUT_DIR\n";
    return 2;
  }
  try {
    const std::string source = argv[1];
    nlohmann::ordered_json metadata;
    if (source.size() > 5 && source.compare(source.size() - 5, 5, ".gguf") == 0) {
      metadata = llm2hef::core::GgufFile(source).metadata();
    } else {
      std::ifstream in(source, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      metadata = nlohmann::ordered_json::parse(text.str());
    }
    const auto files = llm2hef::core::gguf_tokenizer_files(metadata, source);
    const std::string dir = argv[2];
    std::ofstream(dir + "/tokenizer.json", std::ios::binary) << files.tokenizer_json.dump();
    std::ofstream(dir + "/tokenizer_config.json", std::ios::binary) << files.tokenizer_config.dump(2);
  } catch (const llm2hef::BadInput& e) {
    std::cerr << e.what() << "\n";
    return 3;
  }
  return 0;
}
