#include "llm2hef/core/export/model_plan.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "llm2hef/core/checkpoint/checkpoint_dir.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/forward_keys.hpp"
#include "llm2hef/sdk/sliding_window.hpp"

namespace llm2hef::core {

// The plan must carry the user's numbers and agree with what the runtime will do.
void settle_plan(sdk::Plan& p, const sdk::ExportOptions& options, const sdk::Checkpoint& ckpt,
                 const std::string& adapter) {
  auto bad = [&](const std::string& what) { throw InternalError("adapter '" + adapter + "' planned " + what); };
  // --cache given: the adapter may leave it at 0 but not plan another. Not
  // given: the adapter's default (the decoder adapter's comes from its
  // description), else the runtime's. --prefill is the core's alone.
  if (options.cache_size != 0 && p.cache_size != 0 && p.cache_size != options.cache_size)
    bad("a cache of " + std::to_string(p.cache_size) + " for --cache " + std::to_string(options.cache_size));
  if (p.prefill != 0 && p.prefill != options.prefill)
    bad("a prefill of " + std::to_string(p.prefill) + " for --prefill " + std::to_string(options.prefill));
  if (options.cache_size != 0) p.cache_size = options.cache_size;
  if (p.cache_size == 0) p.cache_size = kDefaultCacheCap;
  p.prefill = options.prefill != 0 ? options.prefill : default_prefill(p.cache_size);
  check_cache_and_prefill(p.cache_size, p.prefill);
  if (p.theta.empty() || p.theta.size() % 2)
    bad("a theta of length " + std::to_string(p.theta.size()) + " (must be even)");
  if (p.pe_q_tiles != p.dims.heads)
    bad("q tables tiled " + std::to_string(p.pe_q_tiles) + " times for " + std::to_string(p.dims.heads) + " heads");
  if (p.pe_k_tiles < 1) bad("no k table tiling");
  int64_t sum = 0;
  for (int64_t w : p.lm_head_shards) sum += w;
  if (sum != p.dims.vocab) bad("lm_head shards summing to " + std::to_string(sum) + ", not the vocabulary");
  if (p.cache_cost.values_per_position < 0) bad("a negative cache cost");
  ckpt.expect(p.embedding_tensor, {p.dims.vocab, p.dims.hidden});
}

namespace {
// SEQ = cache: the mask input alone is cache x (heads * cache) values, so
// beyond this even one head needs a 4 GiB float32 mask (Hailo's own models
// use 2048).
constexpr int64_t kMaxCache = 32768;
}  // namespace

void check_cache_and_prefill(int64_t cache_size, int64_t prefill) {
  if (cache_size < 2)
    throw UsageError("--cache must be at least 2 (it is the KV-cache size and the graph's sequence length)");
  if (cache_size > kMaxCache)
    throw UsageError(
        "--cache " + std::to_string(cache_size) + " is larger than " + std::to_string(kMaxCache) +
        ", the largest llm2hef exports (the graph's sequence length equals the cache; Hailo's models use 2048)");
  if (prefill < 1 || prefill > cache_size)
    throw UsageError("--prefill must be between 1 and --cache (" + std::to_string(cache_size) + ")");
}

int64_t default_prefill(int64_t cache_size) { return std::min(kDefaultPrefill, cache_size); }

ResolvedModel resolve_model(const PlanRequest& r, const plugins::AdapterHost& host) {
  // Numbers given are checked before anything is read.
  if (r.cache_size) check_cache_and_prefill(*r.cache_size, r.prefill.value_or(1));
  if (r.prefill && *r.prefill < 1) throw UsageError("--prefill must be at least 1");
  ResolvedModel m;
  m.host = &host;
  m.checkpoint = open_checkpoint(r.model_dir, r.refuse_nonfinite ? NonFinitePolicy::refuse : NonFinitePolicy::record);
  m.resolution = registry::resolve(m.checkpoint->config(), host, r.adapter);
  if (!m.resolution.warning.empty()) spdlog::warn("{}", m.resolution.warning);
  spdlog::info("{}: adapter {} {} ({}, matched by {} '{}')", r.model_dir.string(), m.info().name, m.info().version,
               m.resolution.adapter->path().string(), registry::to_string(m.resolution.how), m.resolution.matched);
  return m;
}

sdk::ExportOptions export_options(const PlanRequest& r, const ResolvedModel& model) {
  const sdk::AdapterInfo& info = model.info();
  sdk::ExportOptions o;
  o.cache_size = r.cache_size.value_or(0);
  o.prefill = r.prefill.value_or(0);
  o.lm_head_shards = r.lm_head_shards;
  for (const auto& [name, value] : r.adapter_options) {
    const sdk::OptionSpec* spec = nullptr;
    for (const auto& s : info.options)
      if (s.name == name) spec = &s;
    if (!spec) {
      std::string known;
      for (const auto& s : info.options) known += " --" + s.name;
      throw UsageError("unknown option --" + name + " for adapter '" + info.name + "'" +
                       (known.empty() ? " (it takes none)" : " (it takes:" + known + ")"));
    }
    if (!spec->choices.empty() && std::find(spec->choices.begin(), spec->choices.end(), value) == spec->choices.end()) {
      std::string choices;
      for (const auto& c : spec->choices) choices += (choices.empty() ? "" : ", ") + c;
      throw UsageError("--" + name + " " + value + ": expected one of " + choices);
    }
    o.adapter_options[name] = value;
  }
  return o;
}

namespace {

// "use --adapter gemma2 or --adapter gemma3": the adapters found whose info
// applies `key`, in the search order (`llm2hef adapters`).
std::string adapters_applying(const plugins::AdapterHost* host, const std::string& key) {
  std::vector<std::string> names;
  if (host)
    for (const auto& a : host->adapters()) {
      const auto& keys = a.info().applied_keys;
      if (std::find(keys.begin(), keys.end(), key) != keys.end() &&
          std::find(names.begin(), names.end(), a.info().name) == names.end())
        names.push_back(a.info().name);
    }
  if (names.empty()) return "no adapter applies it";
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "use --adapter " : " or --adapter ") + name;
  return out;
}

}  // namespace

sdk::Plan plan_model(const ResolvedModel& model, const sdk::ExportOptions& options) {
  sdk::Plan plan;
  try {
    plan = model.adapter().plan(*model.checkpoint, options);
  } catch (const sdk::UnappliedForwardKey& e) {
    throw Unsupported(std::string(e.what()) + "; " + adapters_applying(model.host, e.key()));
  }
  settle_plan(plan, options, *model.checkpoint, model.info().name);
  spdlog::info("cache {}{}, prefill {}{}", plan.cache_size, options.cache_size ? "" : " (default)", plan.prefill,
               options.prefill ? "" : " (default)");
  return plan;
}

}  // namespace llm2hef::core
