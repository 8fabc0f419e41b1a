// Mistral / Ministral-style (MistralForCausalLM): docs/architectures.md section 3.
// The Llama-family description; what is Mistral's own is `sliding_window`
// (every layer), which the shared reading turns into the SDK's policy
// (sdk/sliding_window.hpp): exact when --cache <= window, refused beyond.
// head_dim may be explicit (Mistral-Nemo-style configs); the shared reading
// takes it from config.json when present.
#include "llm2hef/families/llama_family.hpp"
#include "llm2hef/sdk/abi.hpp"

namespace {

using namespace llm2hef::sdk;
using namespace llm2hef::families;

class MistralAdapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "mistral";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    return {kName,
            kVersion,
            "Mistral (Llama with a sliding window: exact for --cache <= sliding_window)",
            {"MistralForCausalLM"},
            {"mistral"},
            {},
            llama_family_applied_keys()};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    DecoderModel m = describe_llama_family(ckpt);
    if (!m.sliding_window.any())
      m.rewrites.push_back("sliding_window null: every layer attends to the whole cache (exact)");
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(MistralAdapter)
