// A complete out-of-tree adapter. It claims a made-up architecture,
// "HelloLlamaForCausalLM", for checkpoints laid out like Llama
// (model.layers.N.self_attn.q_proj ...). Everything else -- reading
// config.json, RoPE (with its scaling), the tensor checks, the plan and the
// graph -- is the SDK's Llama-family description and its DecoderAdapter,
// exactly what the first-party llama adapter uses.
#include "llm2hef/families/llama_family.hpp"
#include "llm2hef/sdk/abi.hpp"

namespace {

using namespace llm2hef::sdk;
using namespace llm2hef::families;

class HelloAdapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "hello";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    // name, version, description, HF architectures claimed, model_types claimed, options
    return {kName, kVersion, "Example out-of-tree adapter (Llama-shaped checkpoints)", {"HelloLlamaForCausalLM"},
            {},    {}};
  }

 protected:
  // Architecture quirks are edits of the description, e.g. biases on q/k/v:
  //   for (LayerDescription& layer : m.layers) attention_spec(layer).qkv_bias = true;
  //   m.rewrites.push_back("q/k/v projection biases");
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    DecoderModel m = describe_llama_family(ckpt);
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(HelloAdapter)
