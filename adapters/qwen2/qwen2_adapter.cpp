// Qwen2 / Qwen2.5: architectures.md section 4. The Llama-family graph with
// biases on q/k/v (always present in Qwen2Attention), none on o_proj.
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/llama_family.hpp"

namespace {

using namespace llm2hef::sdk;

class Qwen2Adapter final : public LlamaFamilyAdapter {
 public:
  AdapterInfo info() const override {
    return {"qwen2", "0.1.0", "Qwen2 / Qwen2.5 (q/k/v biases)", {"Qwen2ForCausalLM"}, {"qwen2"}, {}};
  }

 protected:
  void customize(const Checkpoint& /*ckpt*/, LlamaFamily& m) const override {
    // Qwen2Attention hard-codes q/k/v biases and none on o_proj, whatever attention_bias says.
    m.qkv_bias = true;
    m.o_bias = false;
    m.rewrites.push_back("q/k/v projection biases");
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(Qwen2Adapter, "qwen2", "0.1.0")
