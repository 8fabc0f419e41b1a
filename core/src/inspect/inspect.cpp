#include "llm2hef/core/inspect/inspect.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "llm2hef/core/checkpoint/checkpoint_dir.hpp"
#include "llm2hef/core/export/export_pipeline.hpp"
#include "llm2hef/core/export/make_hailo_config.hpp"
#include "llm2hef/core/export/tokenizer_resource.hpp"
#include "llm2hef/core/har/precision_plan.hpp"
#include "llm2hef/core/inspect/decode_speed.hpp"
#include "llm2hef/core/inspect/inspect_advice.hpp"
#include "llm2hef/core/io/terminal_text.hpp"
#include "llm2hef/core/runtime/host_inputs.hpp"
#include "llm2hef/registry/registry.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

using nlohmann::json;

namespace {

// GiB from 1 GiB up, MiB below it (0.03 GiB says little).
std::string gib(double bytes) {
  char buf[32];
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  if (bytes >= kGiB)
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / kGiB);
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024));
  return buf;
}

// A tokens/s figure: one decimal where it is small enough to matter.
std::string rate(double tokens_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, tokens_per_s < 100 ? "%.1f" : "%.0f", tokens_per_s);
  return buf;
}

// Byte counts are whole numbers in JSON (the estimate is computed in double
// so that it cannot wrap; every term is a whole or half byte count).
int64_t whole_bytes(double bytes) { return static_cast<int64_t>(std::llround(bytes)); }

// What export would write as genai resources: where the chat template comes
// from and every change made to the tokenizer and the template. A problem that
// would stop the export (no tokenizer.json, no eos, a template without
// "default") is reported, not thrown: inspect still shows the rest.
json resource_report(const CheckpointReader& ckpt, const sdk::Plan& plan,
                     const std::optional<std::filesystem::path>& chat_template_file) {
  json r;
  try {
    if (ckpt.tokenizer_json().empty())
      throw BadInput(ckpt.dir().string() + ": tokenizer.json is missing; the Hailo runtime embeds it in the HEF");
    // Only reads: the merges (about half of a BPE tokenizer.json, and not
    // what fix_tokenizer looks at) are checked but not built.
    const TokenizerFix tok = fix_tokenizer(sdk::read_json_without(ckpt.tokenizer_json(), {{"model", "merges"}},
                                                                  sdk::JsonLimits::tokenizer()),
                                           ckpt.tokenizer_json().string(), plan.dims.vocab);
    std::vector<std::string> changes = tok.changes;
    const ChatTemplate found = chosen_chat_template(ckpt, chat_template_file);
    (void)make_hailo_config(ckpt, plan, tok, found, changes);
    // The reader says where a tokenizer_config it built or chose came from
    // (a GGUF's: its metadata, or the folder's file beside it).
    std::string source = found.source;
    if (source.rfind("tokenizer_config.json", 0) == 0) source = ckpt.tokenizer_config_source(source);
    r["chat_template_source"] = found.text ? json(source) : json(nullptr);
    r["changes"] = changes;
  } catch (const BadInput& e) {
    r["error"] = e.what();
    r["exit_status"] = static_cast<int>(e.code());
  } catch (const Unsupported& e) {  // a chat template hailort's minja cannot parse
    r["error"] = e.what();
    r["exit_status"] = static_cast<int>(e.code());
  }
  return r;
}

// A --precision-plan, read before the model: a bad plan file is the user's
// input error whatever the model.
std::optional<har::PrecisionPlan> read_costed_plan(const std::optional<std::filesystem::path>& file) {
  if (!file) return std::nullopt;
  har::PrecisionPlan plan = har::read_precision_plan(*file);
  if (!plan.cost)
    throw BadInput(file->string() +
                   ": field 'budget': missing, so the plan's cost is unknown (re-run `llm2hef calibrate`)");
  return plan;
}

json dims_json(const sdk::ModelDims& d) {
  return {{"hidden", d.hidden},
          {"layers", d.layers},
          {"vocab", d.vocab},
          {"heads", d.heads},
          {"kv_heads", d.kv_heads},
          {"head_dim", d.head_dim},
          {"intermediate", d.intermediate}};
}

// Memory model (estimates; only the DFC's allocation is authoritative):
// every on-chip weight at A8W4 (4 bits), the lm_head included even when
// tied, the embedding table off-chip as uint16 (embeddings.bin); the graph
// caches K and V after the GQA expansion, one byte per value (a8).
// In double throughout: the dims are bounded by the adapter, but their
// products are not, and an estimate must never wrap.
struct MemoryEstimate {
  double embed;        // vocab x hidden, the embedding table's values
  double chip_params;  // weights on the chip
  double weights;      // their bytes at 4 bits
  double kv;           // cache bytes
  bool adapter_cache;  // the adapter states its cached values per position
  double embeddings_bin;
  double total;
};

MemoryEstimate memory_estimate(const sdk::Checkpoint& ckpt, const sdk::Plan& plan, int64_t params) {
  const auto& d = plan.dims;
  const auto f = [](int64_t v) { return static_cast<double>(v); };
  MemoryEstimate m{};
  m.embed = f(d.vocab) * f(d.hidden);
  // The embedding table leaves the chip; a tied head comes back as its own tensor.
  const bool untied_head = ckpt.has("lm_head.weight");
  m.chip_params = static_cast<double>(params) - m.embed + (untied_head ? 0.0 : m.embed);
  m.weights = m.chip_params * 0.5;
  m.kv = kv_cache_bytes(d.layers, d.heads, d.head_dim, plan.cache_size);
  // An adapter whose layers cache something other than K and V in every layer
  // (LFM2's conv layers cache B*x) states its cached values per position.
  m.adapter_cache = plan.cache_cost.values_per_position > 0;
  if (m.adapter_cache)
    m.kv = static_cast<double>(plan.cache_cost.values_per_position) * static_cast<double>(plan.cache_size);
  m.embeddings_bin = m.embed * 2.0;
  m.total = m.weights + m.kv + m.embeddings_bin;
  return m;
}

json memory_report(const MemoryEstimate& m, const sdk::Plan& plan) {
  const double total = m.total;
  json out = {{"weights_a8w4_bytes", whole_bytes(m.weights)},
              {"kv_cache_bytes", whole_bytes(m.kv)},
              {"embeddings_bin_bytes", whole_bytes(m.embeddings_bin)},
              {"total_bytes", whole_bytes(total)},
              {"device_bytes", whole_bytes(kDeviceMemoryBytes)},
              {"fits", total < kDeviceMemoryBytes},
              {"tight", total < kDeviceMemoryBytes && total > largest_shipped_model_bytes()},
              {"kv_cache_layout", m.adapter_cache ? plan.cache_cost.layout : "K and V in every layer"},
              {"assumptions",
               "weights 4 bit each (lm_head counted separately from the embedding), K/V cached at "
               "heads x head_dim (after GQA expansion) 1 byte per value, embeddings.bin uint16; the DFC's "
               "own allocation is authoritative"}};
  // Within a few percent of the device, the estimate cannot say it fits.
  if (total < kDeviceMemoryBytes && total >= kDeviceMemoryBytes * (1.0 - kNearDeviceFraction))
    out["warning"] = "the estimate is within " + std::to_string(static_cast<int>(kNearDeviceFraction * 100)) +
                     "% of the device's 8 GiB: the DFC's own allocation may not fit (a smaller --cache "
                     "leaves room)";
  return out;
}

// compile.py builds its calibration set with `llm2hef inputs`: past the
// largest cache those inputs allow, its optimize step refuses.
json calibration_report(const sdk::Plan& plan, double chip_params) {
  const sdk::RuntimeSizes sizes = sdk::runtime_sizes(plan);
  const int64_t samples = kDefaultCalibSamples;
  json out = {{"largest_cache", largest_calibration_cache(sizes)},
              {"samples", samples},
              {"sample_bytes", calibration_sample_bytes(sizes)},
              {"ram_bytes", whole_bytes(calibration_ram_bytes(sizes, samples))},
              {"fits", sizes.cache <= largest_calibration_cache(sizes)}};
  if (auto why = calibration_limit_warning(sizes, samples)) out["warning"] = *why;
  // The graph holds every on-chip weight (the lm_head in, the embedding table out).
  if (auto why = calibration_memory_warning(plan.dims, sizes, chip_params, samples)) out["memory_warning"] = *why;
  return out;
}

// calibrate counted the plan's extra bytes on the export it measured; they
// add to this estimate as they are, in whole bytes: a sum past 2^63 is
// refused, never wrapped (har::bytes_with_plan).
json precision_plan_report(const std::filesystem::path& file, const har::PrecisionPlan& plan, double total) {
  const har::PlanCost& c = *plan.cost;
  const int64_t with_plan = har::bytes_with_plan(whole_bytes(total), plan);
  return {{"file", file.string()},
          {"model", plan.model},
          {"default_mode", plan.default_mode},
          {"lines", plan.entries.size()},
          {"extra_weight_bytes", c.extra_weight_bytes},
          {"extra_activation_bytes", c.extra_activation_bytes},
          {"total_bytes", with_plan},
          {"fits", static_cast<double>(with_plan) < kDeviceMemoryBytes}};
}

// What each generated token reads, and the tokens/s it allows
// (decode_speed.hpp): the same weights and cache as the memory model, the
// lm_head apart so that its precision can differ. A checkpoint whose
// tensors hold fewer weights than vocab x hidden (none in the suite) keeps
// no block weights rather than a negative count.
json decode_report(const MemoryEstimate& m, const std::optional<har::PrecisionPlan>& precision_plan) {
  DecodeReads reads;
  reads.lm_head_weights = m.embed;
  reads.block_weights = std::max(0.0, m.chip_params - m.embed);
  reads.kv_cache_bytes = m.kv;
  std::optional<PlanWeights> plan_weights;
  if (precision_plan)
    plan_weights = PlanWeights{weight_bytes_of_mode(precision_plan->default_mode),
                               static_cast<double>(precision_plan->cost->extra_weight_bytes)};
  return decode_speed_report(reads, plan_weights);
}

}  // namespace

json inspect_model(const InspectRequest& r, const plugins::AdapterHost& host) {
  const std::optional<har::PrecisionPlan> precision_plan = read_costed_plan(r.precision_plan);
  const ResolvedModel model = resolve_model(r, host);
  const CheckpointReader& ckpt = *model.checkpoint;
  json out;
  out["model"] = r.model_dir.string();
  // As export names it (manifest.json model.name, the DFC network's name).
  out["name"] = checkpoint_model_name(ckpt, r.model_dir);
  out["architectures"] = ckpt.config().raw().value("architectures", json::array());
  out["adapter"] = registry::resolution_json(model.resolution);
  const int64_t params = checkpoint_parameters(ckpt);
  out["parameters"] = params;

  const sdk::ExportOptions options = export_options(r, model);
  sdk::Plan plan;
  try {
    plan = plan_model(model, options);
  } catch (const Unsupported& e) {
    out["supported"] = false;
    out["refused"] = e.what();
    return out;
  }
  out["supported"] = true;
  out["dims"] = dims_json(plan.dims);
  out["cache_size"] = plan.cache_size;
  out["prefill"] = plan.prefill;
  // A plan for another model or cache would be misapplied: refused (exit 3).
  if (precision_plan) har::check_plan_is_for(*precision_plan, out["name"].get<std::string>(), plan.cache_size);

  const MemoryEstimate memory = memory_estimate(ckpt, plan, params);
  out["memory"] = memory_report(memory, plan);
  out["calibration"] = calibration_report(plan, memory.chip_params);
  if (auto why = fidelity_warning(plan.dims.hidden)) out["fidelity_warning"] = *why;
  if (precision_plan) out["precision_plan"] = precision_plan_report(*r.precision_plan, *precision_plan, memory.total);
  out["decode_speed"] = decode_report(memory, precision_plan);
  out["theta_length"] = plan.theta.size();
  out["lm_head_shards"] = plan.lm_head_shards;
  out["lm_head_shard_reason"] = plan.lm_head_shard_reason;
  out["rewrites"] = plan.rewrites;
  // What reading the checkpoint did (a GGUF's: what was dequantized and assumed).
  json notes = ckpt.reading_notes();
  for (const auto& n : plan.notes) notes.push_back(n);
  out["notes"] = notes;
  out["resources"] = resource_report(ckpt, plan, r.chat_template_file);
  return out;
}

int inspect_exit_status(const json& r) {
  if (!r.value("supported", false)) return static_cast<int>(ExitCode::unsupported);
  if (r.contains("resources") && r["resources"].contains("error"))
    return r["resources"].value("exit_status", static_cast<int>(ExitCode::bad_input));
  return 0;
}

std::string inspect_text(const json& r) {
  std::string s;
  s += "model         " + r["model"].get<std::string>() + "\n";
  s += "name          " + printable(r["name"].get<std::string>()) + " (as export names it; --name changes it)\n";
  s += "adapter       " + r["adapter"]["name"].get<std::string>() + " " + r["adapter"]["version"].get<std::string>() +
       " (matched by " + r["adapter"]["matched_by"].get<std::string>() + ")\n";
  for (const auto& other : r["adapter"]["passed_over"])
    s += "passed over   " + other["name"].get<std::string>() + " (" + other["file"].get<std::string>() +
         "), also claims it; --adapter NAME chooses\n";
  s += "parameters    " + std::to_string(r["parameters"].get<int64_t>()) + "\n";
  if (!r["supported"].get<bool>()) return s + "REFUSED       " + r["refused"].get<std::string>() + "\n";
  const auto& d = r["dims"];
  s += "shape         hidden " + std::to_string(d["hidden"].get<int64_t>()) + ", layers " +
       std::to_string(d["layers"].get<int64_t>()) + ", heads " + std::to_string(d["heads"].get<int64_t>()) + "/" +
       std::to_string(d["kv_heads"].get<int64_t>()) + " x " + std::to_string(d["head_dim"].get<int64_t>()) +
       ", vocab " + std::to_string(d["vocab"].get<int64_t>()) + "\n";
  const auto& m = r["memory"];
  s += "cache         " + std::to_string(r["cache_size"].get<int64_t>()) + " (prefill " +
       std::to_string(r["prefill"].get<int64_t>()) + ")\n";
  s += "weights A8W4  " + gib(m["weights_a8w4_bytes"].get<double>()) + "\n";
  s += "KV cache      " + gib(m["kv_cache_bytes"].get<double>()) + " (" + m.value("kv_cache_layout", "") + ")\n";
  s += "embeddings    " + gib(m["embeddings_bin_bytes"].get<double>()) + " (uint16, in the HEF)\n";
  s += "total         " + gib(m["total_bytes"].get<double>()) +
       " of 8 GiB: " + (m["fits"].get<bool>() ? "fits" : "DOES NOT FIT") + " (estimate)\n";
  if (m.value("tight", false))
    s += "tight: " + gib(m["total_bytes"].get<double>()) +
         " is more than the largest model Hailo ships for this "
         "device (Llama3.2-3B-Instruct, about " +
         gib(largest_shipped_model_bytes()) +
         " by this estimate; docs/hailo-contract.md section 11), and the device's 8 GB also hold hailort_server: "
         "nothing this large is proven on it\n";
  if (m.contains("warning")) s += "warning: " + m["warning"].get<std::string>() + "\n";
  if (r.contains("calibration")) {
    const auto& c = r["calibration"];
    s += "calibration   " + gib(c["ram_bytes"].get<double>()) + " of RAM for compile.py's optimize (" +
         std::to_string(c["samples"].get<int64_t>()) + " samples of " + gib(c["sample_bytes"].get<double>()) +
         " beside the DFC's 16 GB); largest cache it can calibrate: " +
         std::to_string(c["largest_cache"].get<int64_t>()) + "\n";
    if (c.contains("warning")) s += "warning: " + c["warning"].get<std::string>() + "\n";
    if (c.contains("memory_warning")) s += "warning: " + c["memory_warning"].get<std::string>() + "\n";
  }
  if (r.contains("fidelity_warning")) s += "warning: " + r["fidelity_warning"].get<std::string>() + "\n";
  if (r.contains("precision_plan")) {
    // The plan's `model` is whatever the file says: escaped, as the path.
    const auto& p = r["precision_plan"];
    const std::string model = printable(p["model"].get<std::string>());
    s += "with plan     " + std::to_string(p["lines"].get<size_t>()) + " line(s) beyond " +
         p["default_mode"].get<std::string>() + " (" + printable(p["file"].get<std::string>()) +
         (model.empty() ? "" : ", calibrated on " + model) + "): +" + gib(p["extra_weight_bytes"].get<double>()) +
         " weights at 8 bits, +" + gib(p["extra_activation_bytes"].get<double>()) + " activations at 16 bits\n";
    s += "total w/ plan " + gib(p["total_bytes"].get<double>()) +
         " of 8 GiB: " + (p["fits"].get<bool>() ? "fits" : "DOES NOT FIT") + " (estimate)\n";
  }
  if (r.contains("decode_speed")) {
    // One line per row, in a fixed order (the JSON object's is alphabetical).
    s += "decode speed  upper bounds from memory bandwidth alone; only the chip can confirm (docs/decode-speed.md)\n";
    const auto& rows = r["decode_speed"]["rows"];
    static const std::pair<const char*, const char*> kRows[] = {{"default", "default     "},
                                                                {"hailo_recipe", "Hailo recipe"},
                                                                {"all_8bit", "all 8-bit   "},
                                                                {"plan", "with plan   "}};
    for (const auto& [name, label] : kRows) {
      if (!rows.contains(name)) continue;
      const auto& row = rows[name];
      s += std::string("  ") + label + "  " + rate(row["tokens_per_s_low"].get<double>()) + "-" +
           rate(row["tokens_per_s_high"].get<double>()) + " tokens/s, " + gib(row["bytes_per_token"].get<double>()) +
           " read per token: " + row["weights"].get<std::string>() + "\n";
    }
  }
  s += "lm_head       " + r["lm_head_shard_reason"].get<std::string>() + "\n";
  s += "rewrites:\n";
  for (const auto& w : r["rewrites"]) s += "  - " + w.get<std::string>() + "\n";
  for (const auto& n : r["notes"]) s += "note: " + n.get<std::string>() + "\n";
  const json& res = r["resources"];
  if (res.contains("error")) {
    s += "resources     EXPORT WOULD STOP: " + res["error"].get<std::string>() + "\n";
  } else {
    s += "chat template " +
         (res["chat_template_source"].is_string() ? res["chat_template_source"].get<std::string>()
                                                  : std::string("none in the checkpoint")) +
         "\n";
    s += "resource changes:" + std::string(res["changes"].empty() ? " none\n" : "\n");
    for (const auto& c : res["changes"]) s += "  - " + c.get<std::string>() + "\n";
  }
  return s;
}

}  // namespace llm2hef::core
