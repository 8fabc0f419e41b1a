// Llama (Llama 2/3/3.1/3.2, SmolLM2, TinyLlama): architectures.md section 3.
// Everything is the shared Llama-family graph; Llama 3's rope_scaling is
// folded into theta by the SDK. attention_bias adds biases to q/k/v and o.
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/llama_family.hpp"

namespace {

using namespace llm2hef::sdk;

class LlamaAdapter final : public LlamaFamilyAdapter {
 public:
  AdapterInfo info() const override {
    return {"llama", "0.1.0", "Llama family (Llama 2/3 with llama3 RoPE scaling, SmolLM2)", {"LlamaForCausalLM"}, {"llama"}, {}};
  }

 protected:
  void customize(const Checkpoint& ckpt, LlamaFamily& m) const override {
    if (ckpt.config().find_bool("attention_bias").value_or(false)) {
      m.qkv_bias = m.o_bias = true;
      m.rewrites.push_back("attention biases on q/k/v/o projections");
    }
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(LlamaAdapter, "llama", "0.1.0")
