// Gemma 3 text (Gemma3ForCausalLM: 270M, 1B): docs/architectures.md section 8.1.
// The Gemma reading (families/gemma_family.hpp) with per-head QK-Norm and two
// RoPE bases, a local one for the sliding-window layers and a global one for
// the full-attention layers, side by side in one theta vector.
#include "llm2hef/families/gemma_family.hpp"
#include "llm2hef/sdk/abi.hpp"

namespace {

using namespace llm2hef::sdk;
using namespace llm2hef::families;

class Gemma3Adapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "gemma3";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    return {kName,
            kVersion,
            "Gemma 3 text (sandwich (1 + w) norms, QK-Norm, GeGLU, local and global RoPE)",
            {"Gemma3ForCausalLM"},
            {"gemma3_text"},
            {sliding_window_option()},
            gemma_family_applied_keys()};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    return describe_gemma_family(ckpt, GemmaGeneration::gemma3);
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(Gemma3Adapter)
