// Qwen3 (dense): docs/architectures.md section 5. The Llama-family description
// with QK-Norm (per-head RMSNorm on q and k, before RoPE) done with constant
// segment matrices (a plain RMSNorm for one head), so nothing sits between a
// head Reshape and its Transpose.
// head_dim comes from config.json and may differ from hidden/heads.
#include "llm2hef/families/llama_family.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/head_norm.hpp"

namespace {

using namespace llm2hef::sdk;
using namespace llm2hef::families;

class Qwen3Adapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "qwen3";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    return {kName,
            kVersion,
            "Qwen3 dense (QK-Norm, explicit head_dim)",
            {"Qwen3ForCausalLM"},
            {"qwen3"},
            {},
            llama_family_applied_keys()};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    DecoderModel m = describe_llama_family(ckpt);
    for (LayerDescription& layer : m.layers) {
      attention_spec(layer).q_norm = "q_norm";
      attention_spec(layer).k_norm = "k_norm";
    }
    m.rewrites.push_back("QK-Norm " + head_rms_norm_form(m.dims.heads, m.dims.kv_heads) + ", before RoPE");
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(Qwen3Adapter)
