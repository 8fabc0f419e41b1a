// The families library (docs/plugin-abi.md, "The families library"): the
// functions that return or edit one family's decoder description. They are
// written in the SDK's terms (DecoderModel, Checkpoint, NormSpec, ...), so
// the namespace sees the SDK's names, but they are compiled into each adapter
// that links them rather than exported by the SDK's shared library: adding or
// changing one changes no symbol the host resolves.
#pragma once

namespace llm2hef::sdk {}

namespace llm2hef::families {
using namespace llm2hef::sdk;
}  // namespace llm2hef::families
