// A complete out-of-tree adapter. It claims a made-up architecture,
// "HelloLlamaForCausalLM", for checkpoints laid out like Llama
// (model.layers.N.self_attn.q_proj ...). Everything else -- reading
// config.json, RoPE (with its scaling), the plan and the graph -- is the SDK's
// shared Llama-family code, exactly what the first-party llama adapter uses.
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/llama_family.hpp"

namespace {

using namespace llm2hef::sdk;

class HelloAdapter final : public LlamaFamilyAdapter {
 public:
  AdapterInfo info() const override {
    // name, version, description, HF architectures claimed, model_types claimed, options
    return {"hello", "0.1.0", "Example out-of-tree adapter (Llama-shaped checkpoints)",
            {"HelloLlamaForCausalLM"}, {}, {}};
  }

 protected:
  // Architecture quirks go here, e.g. biases on the q/k/v projections:
  //   m.qkv_bias = true; m.rewrites.push_back("q/k/v projection biases");
  void customize(const Checkpoint& /*ckpt*/, LlamaFamily& /*m*/) const override {}
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(HelloAdapter, "hello", "0.1.0")
