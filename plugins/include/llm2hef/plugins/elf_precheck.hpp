// What can be told about a candidate adapter from its bytes alone, before
// anything is dlopen-ed: loading runs the library's constructors, so the
// host probes a candidate in a child process first (probe.hpp), and that
// costs a fork per file. A file that is no ELF shared library for this
// machine, or that does not export the adapter entry symbol, can never
// become an adapter: it is refused here, in-process, without running any of
// its code (docs/plugin-abi.md, "Discovery").
#pragma once

#include <filesystem>

namespace llm2hef::plugins {

// Throws PluginLoadError (loader.hpp) with reason unreadable, not_elf,
// wrong_platform or missing_entry. Returns when the file may be an adapter:
// an ELF shared object of this machine's class, byte order and
// architecture whose dynamic symbol table defines the entry symbol, or one
// whose section headers are absent or unreadable (then only loading it can
// tell). Every offset and size read from the file is checked against the
// file's size: a hostile file costs at most a bounded read.
void precheck_elf(const std::filesystem::path& path);

}  // namespace llm2hef::plugins
