// A decoder described once, as a plain value (issue 29): what the model is —
// its sizes, the tensors it reads, each layer and the tail — and one adapter,
// DecoderAdapter, that does everything else from that description: refuses
// the forward-pass keys its info does not apply, checks every tensor row in one
// loop, plans, and builds through the decoder skeleton (decoder.hpp).
//
// An adapter's only hook is describe(checkpoint, options). It runs once per
// export: the description travels from plan() to build_graph() inside the
// Plan, so config.json is read once.
//
// Tensor names are written once: a spec names its tensors (AttentionBlockSpec
// its prefix, SwigluSpec its weights, NormSpec its weight and bias), and the
// tensor table's rows for them are derived from the same specs when the
// description is checked (described_tensors), so a member that edits a spec
// (Qwen2's q/k/v biases) edits the rows too. What no spec names (a fused
// tensor split by a projector, GPT-2's positions) the description declares
// in `tensors` beside the body that reads it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/attention_block.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "llm2hef/sdk/sliding_window.hpp"

namespace llm2hef::sdk {

// ---- the tensor table ----

// One checkpoint tensor the model reads, with the shape config.json implies.
struct TensorRow {
  enum class Presence {
    required,  // must exist with this shape
    optional,  // checked when present (an untied lm_head.weight)
    refused,   // must not exist: another family's tensor this model would silently drop
  };
  std::string name;
  std::vector<int64_t> shape;
  Presence presence = Presence::required;
  std::string refusal = {};  // for refused rows: what the message adds after "is not read by this adapter"
};

class TensorTable {
 public:
  // A row; returns the name so that a spec can be written from it.
  const std::string& add(std::string name, std::vector<int64_t> shape);
  void add_optional(std::string name, std::vector<int64_t> shape);
  void refuse(std::string name, std::string why);

  // The rows a spec reads, derived from the spec itself.
  void norm(const NormSpec& spec, int64_t width);  // weight (and bias); none for a LayerNorm without affine
  void linear(const LinearSpec& spec, int64_t out, int64_t in);  // weight in its layout, bias [out]
  // q/k/v projections (biases as the spec says; none for a fused tensor the
  // description declares), the output projection and the per-head or
  // full-width RMS QK-Norm (rms_qk_norm false: another QK-Norm declares its own rows).
  void attention(const AttentionBlockSpec& spec, const ModelDims& dims, bool qkv_projections = true,
                 bool rms_qk_norm = true);
  void swiglu(const SwigluSpec& spec, int64_t hidden, int64_t intermediate);
  void gelu_mlp(const GeluMlpSpec& spec, int64_t hidden, int64_t intermediate);

  const std::vector<TensorRow>& rows() const { return rows_; }

  // Every row against the checkpoint, in one loop in declaration order:
  // required rows must exist with their shape, optional ones when present;
  // a refused row must be absent unless another row reads it (Unsupported
  // naming the file and the tensor).
  void check(const Checkpoint& ckpt) const;

 private:
  std::vector<TensorRow> rows_;
};

// The lm_head (choose_lm_head's rule) declared in `table`: the embedding
// [vocab, hidden], lm_head.weight when the checkpoint has it; reported in
// `rewrites` (tied or not, after a last-position slice).
LmHead describe_lm_head(TensorTable& table, const Checkpoint& ckpt, const std::string& embedding, int64_t vocab,
                        int64_t hidden, std::vector<std::string>& rewrites);

// ---- what build time hands a layer ----

// The values that exist only while the graph is built. `attention` is the
// attention shape of every layer, derived once from the description's
// dimensions and the plan's cache (DecoderAdapter::build_graph).
struct DecoderContext {
  const Checkpoint& ckpt;
  const DecoderInputs& io;
  AttentionShape attention;
  CausalShifts shifts;               // built once when a layer's mixer is a short conv (short_conv.hpp)
  std::vector<PeTables> pe_by_base;  // the pe tables of each RoPE base (rope_bases.hpp); one base: io.pe
  std::optional<Value> window_band;  // --sliding-window band beyond the window (sliding_window_band.hpp)
};

// Attention through attention_block(); `spec.shape` is left empty by the
// description and set from the context when the graph is built.
struct AttentionMixer {
  AttentionBlockSpec spec;
  // Set: q, k and v come from one fused tensor, `project(g, ckpt, x, part)`
  // giving part 0 q, 1 k, 2 v (fused_qkv_attention_mixer); the description
  // declares the fused tensor's rows.
  std::function<Value(GraphBuilder&, const Checkpoint&, const Value&, int)> fused_qkv = {};
  // A QK-Norm that is a LayerNorm over each head (Phi, StableLM) instead of
  // RMSNorm: one [head_dim] tensor shared by the heads or one per head
  // (head_norm.hpp); biases may be empty. spec.q_norm / k_norm name the scopes.
  struct HeadLayerNorms {
    std::vector<std::string> q_weights, q_biases, k_weights, k_biases;
  };
  std::optional<HeadLayerNorms> head_layer_norms = std::nullopt;
  int64_t rope_base = 0;  // which of the model's RoPE bases this layer reads (Gemma 3)
};
// GeGLU: down(gelu_tanh(gate) * up), the weights and scopes of a SwigluSpec (Gemma).
struct GegluMlp {
  SwigluSpec spec;
};
// A body with no ready-made description (GPT-2's split c_attn): builds from
// the context and the normed input.
using CustomBody = std::function<Value(GraphBuilder&, const DecoderContext&, const Value&)>;
using BranchBody =
    std::variant<AttentionMixer, ShortConvSpec, SwigluSpec, GegluMlp, GeluMlpSpec, ReluMlpSpec, CustomBody>;

// Branch (decoder.hpp) with its body described instead of built.
struct BranchDescription {
  NormSpec norm;
  std::string scope;
  BranchBody body;
  std::string residual;
  std::optional<NormSpec> residual_norm = std::nullopt;
  std::optional<NormSpec> post_norm = std::nullopt;
  bool pre_norm = true;
};

struct LayerDescription {
  BranchDescription mixer;
  BranchDescription ffn;
  bool parallel = false;
  ParallelSum sum = ParallelSum::branches_first;
};

// The attention spec of a layer whose mixer is attention, for a member to
// edit (InternalError otherwise).
AttentionBlockSpec& attention_spec(LayerDescription& layer);

// ---- the description ----

struct DecoderModel {
  ModelDims dims;  // hidden, layers, vocab, heads, kv_heads, head_dim, intermediate
  // The residual stream's width where it differs from the rows the runtime
  // feeds (dims.hidden): OPT's project_in / project_out. 0 = dims.hidden.
  int64_t residual_width = 0;
  int64_t max_positions = 0;  // max_position_embeddings; a --cache beyond it gets a note (0: no note)
  // The largest --cache the export is exact for, when the model itself sets
  // one (GPT-2's and OPT's learned positions, LongRoPE's two factor lists),
  // and why, in a clause naming the file and key. 0: none of its own. A
  // larger --cache is refused with the reason; the sliding window has its own
  // policy (below).
  int64_t largest_exact_cache = 0;
  std::string largest_exact_cache_reason;
  std::string embedding;        // the tensor behind embeddings.bin
  std::vector<float> theta;     // rope_theta_data.bin
  float score_divisor = 0;      // divides q k^T in every layer; 0 = sqrt(head_dim)
  float attention_softcap = 0;  // > 0: attention logits capped as tanh(s / c) * c (Gemma 2)
  int64_t rope_bases = 1;       // RoPE bases side by side in theta (rope_bases.hpp); layers pick theirs
  TensorTable tensors;
  std::vector<LayerDescription> layers;  // one per layer, dims.layers of them
  TailSpec tail;
  // Read whatever the member, so forcing another adapter cannot skip it; the
  // plan applies the SDK's window policy (exact at --cache <= window).
  SlidingWindow sliding_window;
  // Offers --sliding-window band (the adapter declares sliding_window_option()):
  // beyond the window, a constant band in the sliding layers instead of a refusal.
  bool sliding_window_band = false;
  // Between the runtime's inputs_embeds and layer 0 (Granite's embedding
  // multiplier, GPT-2's learned positions); empty = none.
  std::function<Value(GraphBuilder&, const DecoderContext&, const Value&)> embed = {};
  std::vector<std::string> rewrites;  // what the export does differently from HF, one line each
  std::vector<std::string> notes;
  nlohmann::json options = nlohmann::json::object();  // resolved adapter options, recorded in the manifest
  CacheCost cache_cost;  // when the cache holds more than K and V in every layer (LFM2's conv layers)
  // What depends on the cache, run once it is settled and before the plan is
  // made (GPT-2's and OPT's positions and theta, LFM2's cost); empty = none.
  std::function<void(DecoderModel&, int64_t cache_size)> for_cache = {};
};

// The cache an export gets when --cache is not given: the smallest of the
// runtime's default (kRuntimeDefaultCacheSize, the context of Hailo's own
// models), max_positions, the largest exact cache and the sliding window when
// a layer slides (limits under 2 are ignored).
int64_t default_cache_size(const DecoderModel& model);

// The adapter option that lets sliding-window layers go beyond their window:
// "refuse" (default) or "band" (sliding_window_band.hpp).
inline constexpr const char* kSlidingWindowOption = "sliding-window";
OptionSpec sliding_window_option();

// The --gelu option of the adapters whose checkpoints use gelu_new (GPT-2,
// Phi): "sigmoid" (x*sigmoid(1.702x), the parsable approximation, default)
// or "tanh" (gelu_new exactly); the form it chose, and the rewrite line that
// says so. Header-only: no symbol added to the SDK library.
inline OptionSpec gelu_new_option() {
  return {"gelu",
          {"sigmoid", "tanh"},
          "sigmoid",
          "GELU form: sigmoid = x*sigmoid(1.702x) (parsable approximation), tanh = gelu_new exactly"};
}
inline GeluForm gelu_new_form(const std::string& option) {
  return option == "tanh" ? GeluForm::tanh : GeluForm::sigmoid;
}
inline const char* gelu_new_rewrite(GeluForm form) {
  return form == GeluForm::tanh ? "GELU as gelu_new (tanh form, exact)"
                                : "GELU as x*sigmoid(1.702x) (approximation; --gelu tanh for exact)";
}

// The whole table: `tensors`, then the rows every layer's specs and the tail
// read, then the refused rows.
TensorTable described_tensors(const DecoderModel& m);

// What describe() is given: the adapter's own options (validated against
// AdapterInfo::options). Not the cache, which is chosen after the
// description and from it: what depends on the cache goes in for_cache.
struct DescribeOptions {
  std::map<std::string, std::string> adapter_options;

  // The value of an adapter option, or its declared default.
  std::string option(const AdapterInfo& info, const std::string& name) const {
    return adapter_option(info, adapter_options, name);
  }
};

// The one adapter: a family supplies info() and describe().
class DecoderAdapter : public Adapter {
 public:
  // Refuses the forward keys info().applied_keys does not name (before
  // describe() reads anything else, so a checkpoint forced onto the wrong
  // adapter is refused by its own key), describes (once), checks the tensor
  // table, settles the cache (options.cache_size, or default_cache_size when
  // it is 0; a cache beyond the largest exact one is refused), runs
  // for_cache, then plans with the description inside the plan
  // (Plan::adapter_state). The plan carries the cache it chose.
  Plan plan(const Checkpoint& ckpt, const ExportOptions& options) const final;
  // Builds from the description plan() left in the plan.
  void build_graph(const Checkpoint& ckpt, const Plan& plan, GraphBuilder& graph) const final;

 protected:
  // Reads config.json (and tensor presence) into a description; throws
  // Unsupported / BadInput for what cannot be exported exactly.
  virtual DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& options) const = 0;
};

}  // namespace llm2hef::sdk
