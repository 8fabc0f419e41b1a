#include "llm2hef/core/har/compile_lines.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "fixups/fixup_common.hpp"
#include "llm2hef/core/har/har_file.hpp"
#include "llm2hef/core/har/npz_stream.hpp"
#include "llm2hef/core/har/precision_plan.hpp"
#include "llm2hef/core/har/script_names.hpp"

namespace llm2hef::core::har {

namespace fs = std::filesystem;

namespace {

// The fraction of zero elements in each conv's kernel, read from the HAR's
// .npz as a stream (a conv whose kernel is over 90% zeros is constant).
std::map<std::string, double> conv_zero_fractions(const fs::path& path, const HarIndex& idx,
                                                  const std::set<std::string>& convs) {
  std::map<std::string, double> zero_fraction;
  auto in = TarReader::open_file(path);
  while (auto m = in->next()) {
    if (m->name != idx.weights_member) continue;
    auto read = [&](void* b, size_t n) { return in->read(b, n); };
    visit_npz(read, idx.label + ": " + m->name, [&](const std::string& key, const NpyInfo& info, const auto& data) {
      const size_t slash = key.rfind('/');
      if (slash == std::string::npos || key.substr(slash + 1) != "kernel:0" || !convs.count(key.substr(0, slash)))
        return;
      uint64_t total = 0, zeros = 0;
      std::vector<unsigned char> buf((1 << 20) / info.element_size * info.element_size);
      size_t carry = 0;  // bytes of a partial element at the front of buf
      for (;;) {
        const size_t got = data(buf.data() + carry, buf.size() - carry);
        if (got == 0) break;
        const size_t have = carry + got, whole = have / info.element_size * info.element_size;
        for (size_t i = 0; i < whole; i += info.element_size) {
          ++total;
          bool zero = true;
          for (size_t b = 0; b < info.element_size && zero; ++b) zero = buf[i + b] == 0;
          zeros += zero;
        }
        carry = have - whole;
        std::copy(buf.begin() + static_cast<long>(whole), buf.begin() + static_cast<long>(have), buf.begin());
      }
      zero_fraction[key.substr(0, slash)] = total ? static_cast<double>(zeros) / static_cast<double>(total) : 1.0;
    });
  }
  return zero_fraction;
}

// The convs sorted by what the default line does with them.
struct ConvSorting {
  std::vector<std::string> chosen, constant, narrow, taken_by_plan;
};

ConvSorting sort_convs(const HnModel& hn, const std::vector<std::string>& convs,
                       const std::map<std::string, double>& zero_fraction, int64_t pe_width,
                       const std::set<std::string>& raised) {
  ConvSorting out;
  for (const auto& c : convs) {
    auto z = zero_fraction.find(c);
    if (z != zero_fraction.end() && z->second > 0.9) {
      out.constant.push_back(c);
      continue;
    }
    int64_t min_w = -1;
    for (const auto& s : hn.input_shapes(c))
      if (!s.empty()) min_w = min_w < 0 ? s.back() : std::min(min_w, s.back());
    if (min_w >= 0 && min_w <= pe_width) {
      out.narrow.push_back(c);
      continue;
    }
    // A conv the plan sets is not also forced to the default mode: one
    // layer, one quantization_param line.
    if (raised.count(c))
      out.taken_by_plan.push_back(c);
    else
      out.chosen.push_back(c);
  }
  return out;
}

// The plan's lines (one per mode, then the group-wise weight scales) and
// its note.
void add_plan_lines(const HnModel& hn, const PrecisionPlan& plan, const std::vector<MappedEntry>& mapped,
                    const ConvSorting& convs, ScriptLines& out) {
  // One line per mode, in the order the plan first names it; layers in
  // plan order, each once.
  std::vector<std::string> modes;
  std::map<std::string, std::vector<std::string>> per_mode;
  std::set<std::string> listed;
  for (const auto& m : mapped) {
    const std::string& mode = m.entry->precision_mode;
    if (!per_mode.count(mode)) modes.push_back(mode);
    auto& list = per_mode[mode];
    for (const auto& l : m.layers)
      if (listed.insert(l).second) list.push_back(l);
  }
  for (const auto& mode : modes)
    out.lines.push_back("quantization_param(" + script_name_list(hn, per_mode[mode]) + ", precision_mode=" + mode +
                        ")");
  // Group-wise weight scales as Hailo's own script writes them: a line of
  // their own after the precision lines, naming the layers again
  // (docs/quantization-gate.md). One group size is accepted, so one line.
  std::vector<std::string> grouped;
  std::set<std::string> in_group_line;
  for (const auto& m : mapped)
    if (m.entry->weight_group_size)
      for (const auto& l : m.layers)
        if (in_group_line.insert(l).second) grouped.push_back(l);
  if (!grouped.empty())
    out.lines.push_back("quantization_param(" + script_name_list(hn, grouped) +
                        ", weight_group_size=" + std::to_string(kWeightGroupSize) + ")");
  const std::vector<std::string>& taken = convs.taken_by_plan;
  out.notes.push_back("plan " + plan.origin + ": " + std::to_string(mapped.size()) + " entr" +
                      (mapped.size() == 1 ? "y" : "ies") + " -> " + std::to_string(listed.size()) + " layer(s); " +
                      std::to_string(taken.size()) + " compressible conv(s) taken out of the " + plan.default_mode +
                      " line" + (taken.empty() ? "" : ": " + join(taken)) + "; " + std::to_string(grouped.size()) +
                      " conv(s) with weight_group_size=" + std::to_string(kWeightGroupSize));
}

}  // namespace

ScriptLines optimize_lines(const fs::path& path, int64_t pe_width, const PrecisionPlan* plan) {
  ScriptLines out;
  const HarIndex idx = scan_har(path);
  const HnModel& hn = *idx.hn;
  // The plan's layers, mapped before the weights are streamed, so that an
  // entry that maps to nothing stops the run at once.
  std::vector<MappedEntry> mapped;
  std::set<std::string> raised;
  if (plan) {
    mapped = map_plan_to_layers(*plan, hn);
    for (const auto& m : mapped) raised.insert(m.layers.begin(), m.layers.end());
  }
  const std::vector<std::string> convs = hn.layers_of_type("conv");
  std::map<std::string, double> zero_fraction;  // conv -> fraction of zero kernel elements
  if (!idx.weights_member.empty())
    zero_fraction = conv_zero_fractions(path, idx, std::set<std::string>(convs.begin(), convs.end()));
  else
    out.notes.push_back("no .npz weights member: constant convs cannot be recognized by their kernels");
  const std::string default_mode = plan ? plan->default_mode : "a8_w4";
  const ConvSorting sorted = sort_convs(hn, convs, zero_fraction, pe_width, raised);
  if (!sorted.chosen.empty())
    out.lines.push_back("quantization_param(" + script_name_list(hn, sorted.chosen) +
                        ", precision_mode=" + default_mode + ")");
  if (plan) add_plan_lines(hn, *plan, mapped, sorted, out);
  out.notes.push_back(std::to_string(sorted.chosen.size()) + " conv(s) at " + default_mode + "; " +
                      std::to_string(sorted.constant.size()) + " constant (> 90% zero kernel) left out" +
                      (sorted.constant.empty() ? "" : ": " + join(sorted.constant)) + "; " +
                      std::to_string(sorted.narrow.size()) + " with an input <= " + std::to_string(pe_width) +
                      " wide left out" + (sorted.narrow.empty() ? "" : ": " + join(sorted.narrow)));
  return out;
}

ScriptLines compile_lines(const HnModel& hn) {
  ScriptLines out;
  // Only the two groups are compiled; the base scope the quantized HN keeps
  // next to them is ignored here (hailo-contract.md section 3).
  const KvScopes groups = require_kv_scopes(hn);
  const std::string &prefill = groups.prefill, &tbt = groups.tbt;
  for (const auto& g : {prefill, tbt})
    out.lines.push_back(script_name(hn, g) + " = network_group(" + script_name_list(hn, {g}) + ")");
  std::map<std::string, std::set<std::string>> per_group;
  size_t ignored = 0;
  for (const auto& name : hn.cache_layers()) {
    const std::string group = scope_of(name), short_ = short_name(name);
    if (!groups.is_group(group)) {
      ++ignored;
      continue;
    }
    per_group[group].insert(short_);
    if (hn.type(name) == "input_layer") {
      const auto succ = hn.outputs(name);
      if (succ.empty()) throw BadInput(hn.label() + ": cache input '" + name + "' feeds nothing");
      out.lines.push_back(script_name(hn, group + "/tf_rgb_to_hailo_rgb_from_" + short_) + " = format_conversion(" +
                          script_name(hn, name) + ", " + script_name(hn, succ[0]) + ", tf_rgb_to_hailo_rgb)");
    } else {
      const auto pred = hn.inputs(name);
      if (pred.empty()) throw BadInput(hn.label() + ": cache output '" + name + "' has no producer");
      out.lines.push_back(script_name(hn, group + "/hailo_rgb_to_tf_rgb_to_" + short_) + " = format_conversion(" +
                          script_name(hn, pred[0]) + ", " + script_name(hn, name) + ", hailo_rgb_to_tf_rgb)");
    }
  }
  if (!groups.base.empty())
    out.notes.push_back(
        "base scope '" + groups.base + "' ignored (not a network group)" +
        (ignored ? "; its " + std::to_string(ignored) + " cache layer(s) get no format_conversion" : std::string()));
  if (per_group[prefill] != per_group[tbt])
    throw BadInput(hn.label() + ": the cache layers of '" + prefill + "' (" +
                   std::to_string(per_group[prefill].size()) + ") and '" + tbt + "' (" +
                   std::to_string(per_group[tbt].size()) +
                   ") differ; both groups need the same caches (hailo-contract.md section 8)");
  if (per_group[prefill].empty())
    out.notes.push_back("no io_type cache layers: no format_conversion lines (was the KV cache set up?)");
  else
    out.notes.push_back(std::to_string(per_group[prefill].size()) + " cache layer(s) per group");
  return out;
}

}  // namespace llm2hef::core::har
