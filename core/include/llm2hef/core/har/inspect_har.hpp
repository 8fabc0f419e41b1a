// `llm2hef har inspect`: what a HAR holds, read as a stream.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace llm2hef::core::har {

// `llm2hef har inspect`: members, state, scopes, layer counts, inputs,
// outputs, cache layers.
nlohmann::json inspect_har(const std::filesystem::path& har);
std::string inspect_har_text(const nlohmann::json& report);

}  // namespace llm2hef::core::har
