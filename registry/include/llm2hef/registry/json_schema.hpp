// A JSON Schema validator for the subset of draft 2020-12 the registry's own
// schemas use, so that the schema file shipped to publishers is also the
// single source of truth the host checks manifests against.
//
// Supported keywords: type, const, enum, required, properties,
// additionalProperties (boolean), items, minItems, uniqueItems, minLength,
// maxLength, pattern (ECMAScript, unanchored like JSON Schema), minimum, and
// the annotations $schema, $id, title, description. A schema using anything
// else is rejected when the validator is built: a keyword silently ignored
// would make a manifest look checked when it is not.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llm2hef::registry {

struct SchemaViolation {
  std::string field;    // "library.sha256", "architectures[2]", "" for the document
  std::string message;  // "does not match ^[0-9a-f]{64}$"
};

class JsonSchema {
 public:
  // Throws std::invalid_argument when the schema uses an unsupported keyword
  // or is malformed.
  explicit JsonSchema(nlohmann::json schema);

  // Every violation, in document order; empty when the instance is valid.
  std::vector<SchemaViolation> validate(const nlohmann::json& instance) const;

  const nlohmann::json& document() const { return schema_; }

 private:
  nlohmann::json schema_;
};

// "field 'library.sha256': does not match ..." / "document: ..." joined by "; ".
std::string describe(const std::vector<SchemaViolation>& violations);

}  // namespace llm2hef::registry
