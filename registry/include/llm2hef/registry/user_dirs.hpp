// Where the registry client keeps the user's state, by the XDG Base Directory
// rules (a relative XDG_* value is ignored, as the spec says), and where an
// installed llm2hef keeps the keys it ships.
#pragma once

#include <filesystem>

namespace llm2hef::registry {

// Installed adapters: plugins::user_adapter_dir() ($XDG_DATA_HOME/llm2hef/adapters,
// default ~/.local/share/llm2hef/adapters). Throws BadInput when neither
// XDG_DATA_HOME nor HOME is an absolute path.
std::filesystem::path installed_adapter_dir();

// Keys the user trusts: $XDG_CONFIG_HOME/llm2hef/trusted-keys (default
// ~/.config/llm2hef/trusted-keys). Throws BadInput as above.
std::filesystem::path trusted_key_dir();

// Keys shipped with llm2hef: $LLM2HEF_SHIPPED_KEYS_DIR when set (packagers'
// and tests' override), else <exe>/../share/llm2hef/keys of this install.
std::filesystem::path shipped_key_dir();

}  // namespace llm2hef::registry
