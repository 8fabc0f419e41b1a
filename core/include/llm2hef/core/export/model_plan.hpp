// The step `export` and `inspect` share: open the checkpoint, choose its
// adapter, and have the adapter plan the export with the user's numbers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "llm2hef/core/checkpoint/checkpoint_reader.hpp"
#include "llm2hef/core/runtime/hef_names.hpp"
#include "llm2hef/plugins/host.hpp"
#include "llm2hef/registry/registry.hpp"
#include "llm2hef/sdk/adapter.hpp"

namespace llm2hef::core {

// What the user asked for, as far as planning goes.
struct PlanRequest {
  std::filesystem::path model_dir;
  // Unset: the adapter's default cache (the decoder adapter's
  // default_cache_size), then default_prefill.
  std::optional<int64_t> cache_size, prefill;
  int64_t lm_head_shards = 0;  // 0 = adapter's choice
  std::optional<std::string> adapter;
  std::map<std::string, std::string> adapter_options;  // --NAME VALUE the adapter declares
  bool refuse_nonfinite = false;  // a NaN/Inf weight read fails (else: recorded, see nonfinite_weights)
  // --chat-template FILE: the template the runtime gets, in place of the checkpoint's.
  std::optional<std::filesystem::path> chat_template_file;
  bool durable = true;   // flush the output to the disk before the final rename (--no-sync: false)
  unsigned threads = 1;  // threads converting the weights (--threads; the CLI defaults to the cores available)
};

struct ResolvedModel {
  std::unique_ptr<CheckpointReader> checkpoint;
  registry::Resolution resolution;
  // Every adapter found (the resolution's among them): a refused forward key
  // names those that apply it.
  const plugins::AdapterHost* host = nullptr;

  const sdk::Adapter& adapter() const { return resolution.adapter->adapter(); }
  const sdk::AdapterInfo& info() const { return resolution.adapter->info(); }
};

// Throws UsageError unless cache >= 2 and 1 <= prefill <= cache.
void check_cache_and_prefill(int64_t cache_size, int64_t prefill);

// The cache when --cache is not given and the adapter chose none: the
// runtime's default kv_cache_size, the context Hailo's own Hailo-10H models
// use. The decoder adapter chooses its own, capped at the same (the model's
// positions, its largest exact cache and its sliding window:
// sdk::default_cache_size).
inline constexpr int64_t kDefaultCacheCap = kRuntimeDefaultCacheSize;
// The prefill chunk when --prefill is not given: 96 (Hailo's models, the
// runtime's default prefill_input_tokens_count), or the cache when smaller.
inline constexpr int64_t kDefaultPrefill = kRuntimeDefaultPrefillTokens;
int64_t default_prefill(int64_t cache_size);

// Checks the --cache / --prefill given, opens the checkpoint and resolves the
// adapter (the registry's warning, if any, goes to the log).
ResolvedModel resolve_model(const PlanRequest& request, const plugins::AdapterHost& host);

// The adapter's options from the request; UsageError for an option the
// adapter does not declare or a value outside its choices.
sdk::ExportOptions export_options(const PlanRequest& request, const ResolvedModel& model);

// Fills --cache and --prefill into an adapter's plan (the adapter's or the
// defaults above when not given) and checks it against the options and the
// runtime (UsageError for a cache or prefill out of range); InternalError naming `adapter` (exit 5) when an
// adapter set other numbers than the user's or planned what the runtime
// cannot run.
void settle_plan(sdk::Plan& plan, const sdk::ExportOptions& options, const sdk::Checkpoint& ckpt,
                 const std::string& adapter);

// Asks the adapter for its plan and settles it (settle_plan). The adapter's
// Unsupported passes through (exit 4); a forward key it does not apply
// (sdk::UnappliedForwardKey) gets "use --adapter X" for each adapter found
// whose info applies it, or "no adapter applies it".
sdk::Plan plan_model(const ResolvedModel& model, const sdk::ExportOptions& options);

}  // namespace llm2hef::core
