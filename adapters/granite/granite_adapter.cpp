// Granite 3.x dense (GraniteForCausalLM): docs/architectures.md section 3 plus
// four scalars. The Llama-family description with Granite's multipliers
// placed by the SDK (families/scalar_multipliers.hpp): embedding_multiplier as a
// Mul on inputs_embeds, attention_multiplier as the score scale (instead of
// 1/sqrt(head_dim)), residual_multiplier folded into o_proj and down_proj,
// 1/logits_scaling folded into the lm_head.
#include "llm2hef/families/llama_family.hpp"
#include "llm2hef/sdk/abi.hpp"

namespace {

using namespace llm2hef::sdk;
using namespace llm2hef::families;

class GraniteAdapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "granite";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    return {kName,
            kVersion,
            "Granite 3.x dense (embedding, attention, residual and logit multipliers)",
            {"GraniteForCausalLM"},
            {"granite"},
            {},
            llama_family_applied_keys(
                {"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"})};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    DecoderModel m = describe_llama_family(ckpt);
    apply_scalar_multipliers(m, read_granite_multipliers(ckpt.config()));
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(GraniteAdapter)
