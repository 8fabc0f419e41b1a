// `llm2hef hef inspect`'s report: what a HEF holds (header, network groups,
// boundary edges, resources) and how its checksums fared, as JSON and text.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "llm2hef/core/hef/hef_file.hpp"

namespace llm2hef::core::hef {

// 0x followed by 16 hex digits, how reports print checksums.
std::string hex64(uint64_t v);

nlohmann::json inspect_report_json(const HefInfo& info, const ChecksumReport& sums);
std::string inspect_report_text(const HefInfo& info, const ChecksumReport& sums);

}  // namespace llm2hef::core::hef
