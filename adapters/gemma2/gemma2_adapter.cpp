// Gemma 2 (Gemma2ForCausalLM): docs/architectures.md section 8.2. The Gemma
// reading (families/gemma_family.hpp) without QK-Norm, with attention-logit and
// final-logit soft-capping and one RoPE base, described on the post-norm
// decoder.
#include "llm2hef/families/gemma_family.hpp"
#include "llm2hef/sdk/abi.hpp"

namespace {

using namespace llm2hef::sdk;
using namespace llm2hef::families;

class Gemma2Adapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "gemma2";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    return {kName,
            kVersion,
            "Gemma 2 (sandwich (1 + w) norms, GeGLU, attention and final soft-capping)",
            {"Gemma2ForCausalLM"},
            {"gemma2"},
            {sliding_window_option()},
            gemma_family_applied_keys()};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    DecoderModel m = describe_gemma_family(ckpt, GemmaGeneration::gemma2);
    // The one op sequence of this family with no public DFC parse (issue 37):
    // said in manifest.json's notes and by `inspect`, not only in the docs.
    if (m.attention_softcap > 0)
      m.notes.push_back(
          "unproven on the DFC: the attention soft-cap (Div -> Tanh -> Mul between q.k^T and the mask add, in every "
          "layer) has no public DFC parse; the proven recipe adds the mask straight to the scaled scores "
          "(hailo-contract.md section 2). It is kept because attn_logit_softcapping changes the logits (exact in "
          "fp32 here); only a DFC parse can show whether the scores matmul, the soft-cap and the mask add parse "
          "as an attention block");
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(Gemma2Adapter)
