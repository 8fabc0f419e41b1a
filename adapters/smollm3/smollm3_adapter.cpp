// SmolLM3: architectures.md section 6. The Llama-family graph where some
// layers skip RoPE (NoPE). config.json's `no_rope_layers` holds 1 for layers
// that USE RoPE; without it, layer i uses RoPE unless (i+1) is a multiple of
// `no_rope_layer_interval` (default 4), as HF's config does.
#include <string>

#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/llama_family.hpp"

namespace {

using namespace llm2hef::sdk;

class SmolLM3Adapter final : public LlamaFamilyAdapter {
 public:
  AdapterInfo info() const override {
    return {"smollm3", "0.1.0", "SmolLM3 (NoPE layers)", {"SmolLM3ForCausalLM"}, {"smollm3"}, {}};
  }

 protected:
  void customize(const Checkpoint& ckpt, LlamaFamily& m) const override {
    const JsonFile& c = ckpt.config();
    if (auto flags = c.find_int_list("no_rope_layers")) {
      if (static_cast<int64_t>(flags->size()) != m.layers)
        throw llm2hef::BadInput(c.where("no_rope_layers") + ": " + std::to_string(flags->size()) + " entries for " +
                                std::to_string(m.layers) + " layers");
      for (int64_t i = 0; i < m.layers; ++i) m.rope_layers[static_cast<size_t>(i)] = (*flags)[static_cast<size_t>(i)] != 0;
    } else {
      const int64_t interval = c.find_int("no_rope_layer_interval").value_or(4);
      if (interval <= 0) throw llm2hef::BadInput(c.where("no_rope_layer_interval") + ": must be positive");
      for (int64_t i = 0; i < m.layers; ++i) m.rope_layers[static_cast<size_t>(i)] = (i + 1) % interval != 0;
    }
    m.nope_read = true;
    // HF's SmolLM3 rule: without layer_types, the NoPE layers are the ones
    // that slide (use_sliding_window and sliding_window set).
    if (m.sliding.window > 0 && !c.has("layer_types"))
      for (int64_t i = 0; i < m.layers; ++i) m.sliding.layers[static_cast<size_t>(i)] = !m.rope_layers[static_cast<size_t>(i)];
    std::string nope;
    for (int64_t i = 0; i < m.layers; ++i)
      if (!m.rope_layers[static_cast<size_t>(i)]) nope += (nope.empty() ? "" : ",") + std::to_string(i);
    m.rewrites.push_back("NoPE layers (no rotation): " + (nope.empty() ? std::string("none") : nope));
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(SmolLM3Adapter, "smollm3", "0.1.0")
