// JSON documents as text, for stdout and for the files llm2hef writes.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace llm2hef::core {

// `doc` serialised (indent < 0: one line). JSON text must be UTF-8, but some
// strings reach our documents from outside any JSON parser — a folder name
// with Latin-1 bytes, a string field of a HEF — and nlohmann's dump() throws
// on them. Here every invalid byte becomes U+FFFD instead: the report is still
// written, and the name stays recognisable.
std::string json_text(const nlohmann::json& doc, int indent = 2);
// The same for a document that keeps its key order (an HN): never converted
// to nlohmann::json, which would sort it.
std::string json_text(const nlohmann::ordered_json& doc, int indent = 2);

}  // namespace llm2hef::core
