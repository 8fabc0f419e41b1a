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
            {sliding_window_option()}};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    return describe_gemma_family(ckpt, GemmaGeneration::gemma2);
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(Gemma2Adapter)
