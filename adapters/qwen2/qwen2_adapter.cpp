// Qwen2 / Qwen2.5: docs/architectures.md section 4. The Llama-family description
// with biases on q/k/v (always present in Qwen2Attention), none on o_proj.
#include "llm2hef/families/llama_family.hpp"
#include "llm2hef/sdk/abi.hpp"

namespace {

using namespace llm2hef::sdk;
using namespace llm2hef::families;

class Qwen2Adapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "qwen2";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    // attention_bias is moot: Qwen2Attention hard-codes q/k/v biases (describe()).
    return {kName,     kVersion, "Qwen2 / Qwen2.5 (q/k/v biases)", {"Qwen2ForCausalLM"},
            {"qwen2"}, {},       llama_family_applied_keys()};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    DecoderModel m = describe_llama_family(ckpt);
    // Qwen2Attention hard-codes q/k/v biases and none on o_proj, whatever attention_bias says.
    for (LayerDescription& layer : m.layers) {
      attention_spec(layer).qkv_bias = true;
      attention_spec(layer).out_bias = false;
    }
    m.rewrites.push_back("q/k/v projection biases");
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(Qwen2Adapter)
