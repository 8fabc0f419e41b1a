// The plugin entry point every adapter shared library exports.
//
// The host reads the descriptor's first two fields before anything else, so
// their layout never changes. Everything after them is only touched once the
// ABI version and the build fingerprint match the host's, which proves both
// sides share one C++ runtime, one SDK and one set of dependency versions; only
// then may C++ objects and exceptions cross the boundary.
//
// Rules (docs/plugin-abi.md): a change to this struct, to any class with
// virtual functions in sdk/ or to the layout of a type passed to an adapter
// bumps LLM2HEF_ADAPTER_ABI_VERSION. The fingerprint covers the compiler
// family and major version, the libstdc++ dual ABI, the SDK version and the
// protobuf, ONNX and nlohmann_json versions the SDK was built with.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/build_info.hpp"

// The adapter ABI version (on one line: tests and scripts read it). History:
//   6: AdapterInfo::applied_keys (DecoderAdapter refuses with it), UnappliedForwardKey; ForwardKey::applied_by gone
//   5: DecoderModel's largest exact cache and for_cache, describe(DescribeOptions); family descriptions left the SDK
//   4: Plan::adapter_state; DecoderAdapter and the decoder description replace LlamaFamilyAdapter (issue 29)
//   3: SDK building blocks for the issue-14 families (spec layouts changed)
//   2: Plan.cache_cost; the core fills Plan.cache_size and prefill
#define LLM2HEF_ADAPTER_ABI_VERSION 6u
#define LLM2HEF_ADAPTER_ENTRY_SYMBOL "llm2hef_adapter_entry"

#define LLM2HEF_STR2(x) #x
#define LLM2HEF_STR(x) LLM2HEF_STR2(x)

#if defined(__clang__)
#define LLM2HEF_COMPILER_ID "clang-" LLM2HEF_STR(__clang_major__)
#elif defined(__GNUC__)
#define LLM2HEF_COMPILER_ID "gcc-" LLM2HEF_STR(__GNUC__)
#else
#define LLM2HEF_COMPILER_ID "unknown"
#endif

#if defined(_GLIBCXX_USE_CXX11_ABI)
#define LLM2HEF_CXX_ABI "cxx11abi-" LLM2HEF_STR(_GLIBCXX_USE_CXX11_ABI)
#else
#define LLM2HEF_CXX_ABI "cxx11abi-none"
#endif

// Computed in the translation unit that includes it: the host's copy and each
// plugin's copy reflect how *they* were compiled.
#define LLM2HEF_BUILD_FINGERPRINT                                                                               \
  LLM2HEF_COMPILER_ID ";" LLM2HEF_CXX_ABI ";sdk-" LLM2HEF_SDK_VERSION ";protobuf-" LLM2HEF_SDK_PROTOBUF_VERSION \
                      ";onnx-" LLM2HEF_SDK_ONNX_VERSION                                                         \
                      ";json-" LLM2HEF_STR(NLOHMANN_JSON_VERSION_MAJOR) "." LLM2HEF_STR(                        \
                          NLOHMANN_JSON_VERSION_MINOR) "." LLM2HEF_STR(NLOHMANN_JSON_VERSION_PATCH)

extern "C" {

struct llm2hef_adapter_entry_t {
  // Stable prefix: never moves.
  uint32_t abi_version;
  uint32_t struct_size;
  // Valid only when abi_version matches.
  const char* name;
  const char* version;
  const char* fingerprint;
  llm2hef::sdk::Adapter* (*create)();
  void (*destroy)(llm2hef::sdk::Adapter*);
};

typedef const llm2hef_adapter_entry_t* (*llm2hef_adapter_entry_fn)();
}

#define LLM2HEF_EXPORT __attribute__((visibility("default")))

// Defines the entry point of an adapter library. Use once per .so (or the
// class form below, which takes the name and version from the class):
//   LLM2HEF_DEFINE_ADAPTER(Gpt2Adapter, "gpt2", "0.1.0")
#define LLM2HEF_DEFINE_ADAPTER(CLASS, NAME, VERSION)                                 \
  extern "C" LLM2HEF_EXPORT const llm2hef_adapter_entry_t* llm2hef_adapter_entry() { \
    static const llm2hef_adapter_entry_t entry = {                                   \
        LLM2HEF_ADAPTER_ABI_VERSION,                                                 \
        sizeof(llm2hef_adapter_entry_t),                                             \
        NAME,                                                                        \
        VERSION,                                                                     \
        LLM2HEF_BUILD_FINGERPRINT,                                                   \
        []() -> llm2hef::sdk::Adapter* { return new CLASS(); },                      \
        [](llm2hef::sdk::Adapter* a) { delete a; },                                  \
    };                                                                               \
    return &entry;                                                                   \
  }

// The usual form: CLASS states its name and version once, as static members
// kName and kVersion, which its info() returns too, so the entry point and
// info() cannot disagree (the host refuses an adapter whose two names differ).
#define LLM2HEF_DEFINE_ADAPTER_CLASS(CLASS) LLM2HEF_DEFINE_ADAPTER(CLASS, CLASS::kName, CLASS::kVersion)
