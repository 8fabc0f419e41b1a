// `llm2hef registry search|install|list|uninstall|keys|sign|collect`: the
// client of a signed adapter index (docs/registry.md).
#pragma once

#include "command_line.hpp"

namespace llm2hef::cli {

// Adds the client commands under the `registry` group.
void add_registry_client_commands(CommandLine& cli, CLI::App& registry_group);

// `registry keys ...`, `registry sign`, `registry collect` (cmd_registry_keys.cpp).
void add_registry_keys_commands(CommandLine& cli, CLI::App& registry_group);

}  // namespace llm2hef::cli
