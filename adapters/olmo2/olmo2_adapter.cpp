// OLMo 2 (Olmo2ForCausalLM): architectures.md section 8. The post-norm
// decoder description with norms only after attention and MLP (h = h + norm(attn(h))),
// SwiGLU, one RoPE base, and QK-Norm over the full q and k width (one
// RMSNorm over heads*head_dim, before the head split).
#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/forward_keys.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/post_norm_decoder.hpp"
#include "llm2hef/sdk/rope.hpp"

namespace {

using namespace llm2hef::sdk;
using llm2hef::Unsupported;

class Olmo2Adapter final : public DecoderAdapter {
 public:
  AdapterInfo info() const override {
    return {"olmo2", "0.1.0", "OLMo 2 (post-norms, full-width QK-Norm)", {"Olmo2ForCausalLM"}, {"olmo2"}, {}};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const ExportOptions& /*options*/) const override {
    const JsonFile& c = ckpt.config();
    PostNormDecoder m = read_post_norm_decoder(ckpt);
    refuse_unapplied_forward_keys(c, {});  // OLMo 2 reads none of the table's keys (attention_bias: refused)
    m.rms_eps = static_cast<float>(checked_number_or(c, "rms_norm_eps", 1e-5, kNormEpsilon));  // Olmo2Config's default
    read_activation(c, "hidden_act", {"silu"}, "SwiGLU with silu only");
    m.pre_norms = false;
    m.qk_norm = QkNorm::full_width;
    m.rope_bases = {rope_inv_freq(c, m.head_dim, m.rewrites)};
    m.layer_base.assign(static_cast<size_t>(m.layers), 0);
    m.rewrites.push_back("norms after attention and MLP, before each residual Add (no pre-norms)");
    m.rewrites.push_back("QK-Norm over the full q and k width, before the head split");
    return describe_post_norm_decoder(m);
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(Olmo2Adapter, "olmo2", "0.1.0")
