// The adapter interface: identity plus the hooks the export pipeline calls.
//
// An adapter is everything llm2hef knows about one architecture family. The
// host never looks inside a checkpoint on its own: it asks the adapter for a
// Plan (what will be exported, or a clear refusal), then for the graph.
// Generic work — resources, hailo-config, model scripts, the DFC driver — is
// done by the core from the Plan.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/sdk/checkpoint.hpp"

namespace llm2hef::sdk {

class GraphBuilder;
class HnFixupContext;  // llm2hef/sdk/hn_fixup.hpp; adapters that need no HN surgery ignore it

// An adapter-specific command-line option, e.g. GPT-2's `--gelu sigmoid|tanh`.
struct OptionSpec {
  std::string name;                  // without the leading dashes
  std::vector<std::string> choices;  // allowed values; empty = free text
  std::string default_value;
  std::string help;
};

struct AdapterInfo {
  std::string name;                        // "gpt2"
  std::string version;                     // adapter's own version, semver
  std::string description;                 // one line
  std::vector<std::string> architectures;  // HF config.json "architectures" values claimed
  std::vector<std::string> model_types;    // HF config.json "model_type" values claimed
  std::vector<OptionSpec> options;
  // The config.json keys that change the forward pass (sdk/forward_keys.hpp)
  // this adapter applies; every other key of that table, present with a
  // value that is not neutral, is refused. Stated here once: DecoderAdapter
  // refuses with it before describe() runs, `llm2hef adapters --json`
  // reports it, and the host names the adapters applying a refused key.
  std::vector<std::string> applied_keys = {};
};

// The value of option `name` in `given` (validated against info.options), or
// its declared default; InternalError for an option `info` does not declare.
std::string adapter_option(const AdapterInfo& info, const std::map<std::string, std::string>& given,
                           const std::string& name);

struct ExportOptions {
  int64_t cache_size = 0;                              // SEQ of the exported graph and the runtime's kv_cache_size
  int64_t prefill = 0;                                 // prefill_input_tokens_count
  int64_t lm_head_shards = 0;                          // 0 = let the adapter choose
  std::map<std::string, std::string> adapter_options;  // validated against AdapterInfo::options

  // The value of an adapter option, or its declared default.
  std::string option(const AdapterInfo& info, const std::string& name) const;
};

// What the graph caches per position when that is not K and V in every layer
// (LFM2's conv layers cache B*x), and the figures behind it. Recorded in
// manifest.json (`cache_cost`) and used by inspect's memory estimate.
struct CacheCost {
  int64_t values_per_position = 0;                    // 0: not stated (K and V in every layer)
  std::string layout;                                 // one line: what is cached
  nlohmann::json figures = nlohmann::json::object();  // the adapter's own cost figures, by name
};

// The numbers the graph, the runtime tables and hailo-config must agree on.
struct ModelDims {
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t vocab = 0;
  int64_t heads = 0;     // attention heads (mask is tiled this many times)
  int64_t kv_heads = 0;  // key/value heads (k tables are tiled this many times)
  int64_t head_dim = 0;
  int64_t intermediate = 0;
};

struct Plan {
  ModelDims dims;
  int64_t cache_size = 0;
  int64_t prefill = 0;

  // rope_theta_data.bin: the runtime computes cos/sin(theta[l] * position) in
  // float32 for every l. Its length (even) is the width of each pe row.
  std::vector<float> theta;
  // How many times the runtime tiles the q and k tables (hailo-config
  // num_attention_heads / num_key_value_heads). The mask is tiled `dims.heads`.
  int64_t pe_q_tiles = 0;
  int64_t pe_k_tiles = 0;

  std::string embedding_tensor;         // checkpoint tensor behind embeddings.bin
  std::vector<int64_t> lm_head_shards;  // output widths, summing to dims.vocab
  std::string lm_head_shard_reason;     // why this split (shown by inspect, kept in manifest)

  std::vector<std::string> rewrites;                  // what the export does differently from HF, one line each
  std::vector<std::string> notes;                     // anything else the user should know
  nlohmann::json options = nlohmann::json::object();  // resolved options, recorded in manifest.json
  CacheCost cache_cost;
  nlohmann::json hailo_config_overrides = nlohmann::json::object();  // merged last into hailo-config.json

  // The adapter's own reading, handed from its plan() to its build_graph()
  // so that config.json is read once per export (DecoderAdapter keeps its
  // DecoderModel here). The host only carries it, and drops it before the
  // adapter is unloaded: it may hold the adapter's code.
  std::shared_ptr<const void> adapter_state;
};

class Adapter {
 public:
  virtual ~Adapter() = default;

  virtual AdapterInfo info() const = 0;

  // Reads config.json and tensor shapes; throws Unsupported with a precise
  // reason for anything the adapter cannot convert exactly.
  virtual Plan plan(const Checkpoint& ckpt, const ExportOptions& options) const = 0;

  // Emits the Hailo-shaped graph (six inputs, last-position logits) with the
  // builder, streaming weights from the checkpoint.
  virtual void build_graph(const Checkpoint& ckpt, const Plan& plan, GraphBuilder& graph) const = 0;

  // Architecture-specific HN surgery after the core's generic fixups. Most
  // adapters need none.
  virtual void har_fixups(HnFixupContext& /*ctx*/) const {}
};

}  // namespace llm2hef::sdk
