// `llm2hef hef check`: a HEF against what the Hailo genai runtime requires
// (hailo-contract.md sections 6, 8, 9, 10) and, optionally, against the
// manifest.json llm2hef wrote at export.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "llm2hef/core/hef/hef_file.hpp"

namespace llm2hef::core::hef {

enum class Severity { error, warning };

struct ContractFinding {
  std::string rule;     // e.g. "network-groups"
  std::string section;  // hailo-contract.md section, e.g. "9"
  Severity severity = Severity::error;
  std::string message;
};

struct ContractReport {
  std::string file;
  std::vector<ContractFinding> findings;
  std::vector<std::string> passed;  // rules that ran and found nothing
  // What the check derived (null where it could not): vocab, hidden, heads, ...
  nlohmann::json derived = nlohmann::json::object();

  size_t errors() const;
  size_t warnings() const;
};

struct ContractOptions {
  std::optional<nlohmann::json> manifest;  // export's manifest.json
  std::string manifest_path;
  // Resources up to this size are hashed against their stored XXH3.
  uint64_t checksum_limit = 64ull << 20;
};

// Reads only the header, the proto and the small resources; embeddings.bin is
// judged by its size (and hashed only under checksum_limit).
ContractReport check_hef_contract(const ByteSource& src, const HefInfo& info, const ContractOptions& options);

std::string contract_text(const ContractReport& report);
nlohmann::json contract_json(const ContractReport& report);

// hailo-config.json rules shared by `hef check` and `hef set-config`: parses
// `text` and returns its problems (empty when it is usable).
std::vector<ContractFinding> check_hailo_config_text(const std::string& text, const std::string& where);

}  // namespace llm2hef::core::hef
