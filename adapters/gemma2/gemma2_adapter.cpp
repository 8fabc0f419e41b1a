// Gemma 2 (Gemma2ForCausalLM): architectures.md section 8. The Gemma
// skeleton (sdk/gemma_family.hpp) without QK-Norm, with attention-logit and
// final-logit soft-capping and one RoPE base.
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/gemma_family.hpp"

namespace {

using namespace llm2hef::sdk;

class Gemma2Adapter final : public GemmaFamilyAdapter<GemmaGeneration::gemma2> {
 public:
  AdapterInfo info() const override {
    return {"gemma2", "0.1.0", "Gemma 2 (sandwich (1 + w) norms, GeGLU, attention and final soft-capping)",
            {"Gemma2ForCausalLM"}, {"gemma2"}, {sliding_window_option()}};
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(Gemma2Adapter, "gemma2", "0.1.0")
