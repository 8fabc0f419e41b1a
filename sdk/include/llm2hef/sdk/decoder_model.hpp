// A decoder described once, as a plain value (issue 29): what the model is —
// its sizes, the tensors it reads, each layer and the tail — and one adapter,
// DecoderAdapter, that does everything else from that description: refuses
// the forward-pass keys its info does not apply, checks every tensor row in one
// loop, plans, and builds through the decoder skeleton (decoder.hpp) and
// the layers it describes (decoder_layer.hpp).
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
// in `tensors` beside the body that reads it; a custom body carries its own.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/attention_block.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/decoder_layer.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "llm2hef/sdk/sliding_window.hpp"
#include "llm2hef/sdk/tensor_table.hpp"

namespace llm2hef::sdk {

// The lm_head (choose_lm_head's rule) declared in `table`: the embedding
// [vocab, hidden], lm_head.weight when the checkpoint has it; reported in
// `rewrites` (tied or not, after a last-position slice).
LmHead describe_lm_head(TensorTable& table, const Checkpoint& ckpt, const std::string& embedding, int64_t vocab,
                        int64_t hidden, std::vector<std::string>& rewrites);

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
