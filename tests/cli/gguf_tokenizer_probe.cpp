// Test driver for core::gguf_tokenizer_files: reads GGUF metadata written as
// JSON (key -> value, as gguf-py reads it) and writes the tokenizer.json and
// tokenizer_config.json llm2hef makes of it, so that tests/cli/test_gguf_tokenizer.py
// can encode text with them through the `tokenizers` package. Exit 3 with the
// message on refusal, as llm2hef does.
#include <fstream>
#include <iostream>
#include <sstream>

#include "llm2hef/core/checkpoint/gguf_tokenizer.hpp"
#include "llm2hef/sdk/errors.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: gguf_tokenizer_probe METADATA.json OUT_DIR\n";
    return 2;
  }
  try {
    std::ifstream in(argv[1], std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const auto metadata = nlohmann::ordered_json::parse(text.str());
    const auto files = llm2hef::core::gguf_tokenizer_files(metadata, argv[1]);
    const std::string dir = argv[2];
    std::ofstream(dir + "/tokenizer.json", std::ios::binary) << files.tokenizer_json.dump();
    std::ofstream(dir + "/tokenizer_config.json", std::ios::binary) << files.tokenizer_config.dump(2);
  } catch (const llm2hef::BadInput& e) {
    std::cerr << e.what() << "\n";
    return 3;
  }
  return 0;
}
