// Llama (Llama 2/3/3.1/3.2, SmolLM2, TinyLlama): docs/architectures.md section 3.
// The Llama-family description as is: Llama 3's rope_scaling is folded into
// theta and attention_bias read by the SDK.
#include "llm2hef/families/llama_family.hpp"
#include "llm2hef/sdk/abi.hpp"

namespace {

using namespace llm2hef::sdk;
using namespace llm2hef::families;

class LlamaAdapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "llama";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    return {kName,
            kVersion,
            "Llama family (Llama 2/3 with llama3 RoPE scaling, SmolLM2)",
            {"LlamaForCausalLM"},
            {"llama"},
            {},
            llama_family_applied_keys()};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    return describe_llama_family(ckpt);
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(LlamaAdapter)
