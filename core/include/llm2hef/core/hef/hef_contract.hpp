// `llm2hef hef check`: a HEF judged by hailort v5.2.0's own rules (what
// Hef::create, the configure step and the genai server do with it;
// hailo-contract.md sections 6, 8, 9, 10; docs/hef.md lists every rule with
// its hailort source) and, optionally, against the manifest.json llm2hef
// wrote at export.
//
// For other commands (e.g. `llm2hef package`): check_hef_file(path, options)
// returns the report; refuse the HEF when report.errors() > 0.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "llm2hef/core/hef/hef_file.hpp"
#include "llm2hef/core/manifest/export_manifest.hpp"
#include "llm2hef/core/rules/finding.hpp"

namespace llm2hef::core::hef {

// The HailoRT version hailo-contract.md documents (v5.2.0): the default
// device library version for STRICT_RUNTIME_VERSIONING.
inline constexpr std::array<uint32_t, 2> kDocumentedHailort = {5, 2};

// "X.Y" (a third component is accepted and ignored); UsageError otherwise.
std::array<uint32_t, 2> parse_hailort_version(const std::string& text);

struct ContractOptions {
  std::optional<ExportManifest> manifest;  // export's manifest.json
  std::string manifest_path;
  // Resources up to this size are hashed against their stored XXH3; the
  // whole-file sum is verified when the file is no larger.
  uint64_t checksum_limit = 64ull << 20;
  // HailoRT major.minor on the device (STRICT_RUNTIME_VERSIONING).
  std::array<uint32_t, 2> hailort = kDocumentedHailort;
  // Judge this hailo-config.json text instead of the HEF's own (set-config).
  std::optional<std::string> config_override;
  // The client will load the HEF with LLMParams' optimize_memory_on_device
  // = true (host-side tokenizer and embeddings): only then must
  // tokenizer.json and embeddings.bin be the last bytes, so only then is the
  // resource-order rule an error. hailort's default is false, and
  // hailo-ollama keeps it (hailo-contract.md section 9).
  bool optimize_memory_on_device = false;
  // hailo-ollama will serve the HEF: it renders the chat template (its store
  // manifest's copy of hailo-config.json's) with an older minja than
  // hailort's, so what that one lacks is an error (rule
  // chat-template-ollama; docs/chat-templates.md). `package` judges it
  // itself, to refuse it as unsupported (exit 4) unless --force-template.
  bool hailo_ollama = true;
};

// The rules whose outcome depends on hailo-config.json: `set-config` refuses
// a new config that fails any of them against the HEF it patches.
const std::vector<std::string>& config_dependent_rules();

// Reads only the header, the proto and the small resources; embeddings.bin is
// judged by its size (and hashed only under checksum_limit). Severities:
// error, hailort refuses the HEF or misbehaves with it; warning, it runs but
// not as intended; info, a fact worth showing (e.g. the unread field 10).
// Findings of agreement with llm2hef's own manifest cite no section. The
// report lists the rules that passed and what the check derived (null where
// it could not: vocab, hidden, heads, ...); rules::report_text and
// rules::report_json (rules/render.hpp) print it, as they print lint's.
rules::Report check_hef_contract(const ByteSource& src, const HefInfo& info, const ContractOptions& options);

// Opens and checks `path`. A file that is not a readable, well-formed HEF
// gives one error finding (rule "format") instead of an exception.
rules::Report check_hef_file(const std::string& path, const ContractOptions& options = {});

// hailo-config.json as the server parses it (types, required keys), shared
// by `hef check` and `hef set-config`: errors (rule "hailo-config") and
// warnings (rule "stop-tokens"); empty when nothing is wrong.
std::vector<rules::Finding> check_hailo_config_text(const std::string& text, const std::string& where);

}  // namespace llm2hef::core::hef
