// The step `export` and `inspect` share: open the checkpoint, choose its
// adapter, and have the adapter plan the export with the user's numbers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "llm2hef/plugins/host.hpp"
#include "llm2hef/registry/registry.hpp"
#include "llm2hef/sdk/adapter.hpp"

namespace llm2hef::core {

// What the user asked for, as far as planning goes.
struct PlanRequest {
  std::filesystem::path model_dir;
  int64_t cache_size = 0, prefill = 0;
  int64_t lm_head_shards = 0;  // 0 = adapter's choice
  std::optional<std::string> adapter;
  std::map<std::string, std::string> adapter_options;  // --NAME VALUE the adapter declares
  bool refuse_nonfinite = false;
  bool durable = true;  // flush the output to the disk before the final rename (--no-sync: false)  // a NaN/Inf weight read fails (else: recorded, see nonfinite_weights)
};

struct ResolvedModel {
  std::unique_ptr<sdk::Checkpoint> checkpoint;
  registry::Resolution resolution;

  const sdk::Adapter& adapter() const { return resolution.adapter->adapter(); }
  const sdk::AdapterInfo& info() const { return resolution.adapter->info(); }
};

// Throws UsageError unless cache >= 2 and 1 <= prefill <= cache.
void check_cache_and_prefill(int64_t cache_size, int64_t prefill);

// Checks --cache / --prefill, opens the checkpoint and resolves its adapter
// (the registry's warning, if any, goes to the log).
ResolvedModel resolve_model(const PlanRequest& request, const plugins::AdapterHost& host);

// The adapter's options from the request; UsageError for an option the
// adapter does not declare or a value outside its choices.
sdk::ExportOptions export_options(const PlanRequest& request, const sdk::AdapterInfo& info);

// Fills --cache and --prefill into an adapter's plan and checks it against
// the options and the runtime; InternalError naming `adapter` (exit 5) when an
// adapter set other numbers than the user's or planned what the runtime
// cannot run.
void settle_plan(sdk::Plan& plan, const sdk::ExportOptions& options, const sdk::Checkpoint& ckpt,
                 const std::string& adapter);

// Asks the adapter for its plan and settles it (settle_plan). The adapter's
// Unsupported passes through (exit 4).
sdk::Plan plan_model(const ResolvedModel& model, const sdk::ExportOptions& options);

}  // namespace llm2hef::core
