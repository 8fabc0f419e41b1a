// Where the user finds hailo-contract.md, the document every lint and
// `hef check` finding cites by section: findings name it by this path, so a
// citation can be followed from any machine llm2hef is installed on.
#pragma once

#include <filesystem>

namespace llm2hef::core {

// <prefix>/share/doc/llm2hef/hailo-contract.md of the running llm2hef,
// found from the executable's own location (relocatable: no prefix is
// compiled in); when that file is absent, as in a build tree, the source
// tree's docs/hailo-contract.md. If neither exists, the installed path (where
// the install would have put it). Absolute, resolved once per process.
const std::filesystem::path& contract_doc_path();

// The same rule for any executable location: `executable` is the llm2hef
// binary (empty when unknown). Separate so the rule can be tested.
std::filesystem::path contract_doc_path_for(const std::filesystem::path& executable);

}  // namespace llm2hef::core
