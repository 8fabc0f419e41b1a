// SmolLM3: docs/architectures.md section 6. The Llama-family description where
// some layers skip RoPE (NoPE). config.json's `no_rope_layers` holds 1 for
// layers that USE RoPE; without it, layer i uses RoPE unless (i+1) is a
// multiple of `no_rope_layer_interval` (default 4), as HF's config does.
#include <string>

#include "llm2hef/families/llama_family.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace {

using namespace llm2hef::sdk;
using namespace llm2hef::families;

class SmolLM3Adapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "smollm3";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    return {kName,
            kVersion,
            "SmolLM3 (NoPE layers)",
            {"SmolLM3ForCausalLM"},
            {"smollm3"},
            {},
            llama_family_applied_keys({"no_rope_layers", "no_rope_layer_interval"})};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    const JsonFile& c = ckpt.config();
    DecoderModel m = describe_llama_family(ckpt);
    const int64_t layers = m.dims.layers;
    std::vector<bool> rope(static_cast<size_t>(layers));
    if (auto flags = c.find_int_list("no_rope_layers")) {
      if (static_cast<int64_t>(flags->size()) != layers)
        throw llm2hef::BadInput(c.where("no_rope_layers") + ": " + std::to_string(flags->size()) + " entries for " +
                                std::to_string(layers) + " layers");
      for (size_t i = 0; i < rope.size(); ++i) rope[i] = (*flags)[i] != 0;
    } else {
      const int64_t interval = c.find_int("no_rope_layer_interval").value_or(4);
      if (interval <= 0) throw llm2hef::BadInput(c.where("no_rope_layer_interval") + ": must be positive");
      for (size_t i = 0; i < rope.size(); ++i) rope[i] = static_cast<int64_t>(i + 1) % interval != 0;
    }
    // HF's SmolLM3 rule: without layer_types, the NoPE layers are the ones
    // that slide (use_sliding_window and sliding_window set).
    const bool nope_layers_slide = m.sliding_window.window > 0 && !c.has("layer_types");
    std::string nope;
    for (size_t i = 0; i < rope.size(); ++i) {
      attention_spec(m.layers[i]).rope = rope[i];
      if (nope_layers_slide) m.sliding_window.layers[i] = !rope[i];
      if (!rope[i]) nope += (nope.empty() ? "" : ",") + std::to_string(i);
    }
    m.rewrites.push_back("NoPE layers (no rotation): " + (nope.empty() ? std::string("none") : nope));
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(SmolLM3Adapter)
