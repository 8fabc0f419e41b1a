// OLMo 2 (Olmo2ForCausalLM): docs/architectures.md section 8.3. The post-norm
// decoder description with norms only after attention and MLP (h = h + norm(attn(h))),
// SwiGLU, one RoPE base, and QK-Norm over the full q and k width (one
// RMSNorm over heads*head_dim, before the head split).
#include "llm2hef/families/post_norm_decoder.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/rope.hpp"
#include "llm2hef/sdk/rope_bases.hpp"

namespace {

using namespace llm2hef::sdk;
using namespace llm2hef::families;

class Olmo2Adapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "olmo2";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    // Applies none of the forward keys (attention_bias: refused).
    return {kName, kVersion, "OLMo 2 (post-norms, full-width QK-Norm)", {"Olmo2ForCausalLM"}, {"olmo2"}, {}, {}};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    const JsonFile& c = ckpt.config();
    DecoderModel m = describe_post_norm_decoder(ckpt, 1e-5);  // Olmo2Config's default rms_norm_eps
    read_activation(c, "hidden_act", {"silu"}, "SwiGLU with silu only");
    for (LayerDescription& l : m.layers) {
      l.mixer.pre_norm = l.ffn.pre_norm = false;
      AttentionBlockSpec& attention = attention_spec(l);
      attention.q_norm = "q_norm";
      attention.k_norm = "k_norm";
      attention.qk_norm_full_width = true;
    }
    m.theta = rope_bases_theta({rope_inv_freq(c, m.dims.head_dim, m.rewrites)});
    m.rewrites.push_back("norms after attention and MLP, before each residual Add (no pre-norms)");
    m.rewrites.push_back("QK-Norm over the full q and k width, before the head split");
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(Olmo2Adapter)
