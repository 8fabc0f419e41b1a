#include "llm2hef/core/hef/hef_report.hpp"

#include <cstdio>
#include <iomanip>
#include <set>
#include <sstream>

namespace llm2hef::core::hef {

using nlohmann::json;

std::string hex64(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << std::setw(16) << std::setfill('0') << v;
  return s.str();
}

namespace {

std::string human_bytes(uint64_t n) {
  char buf[64];
  if (n >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(n) / (1ull << 30));
  else if (n >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1ull << 20));
  else if (n >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(n) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  return buf;
}

json edge_json(const EdgeLayer& e) {
  json j = {{"name", e.name},
            {"shape", {e.height, e.width, e.features}},
            {"padded_shape", {e.padded_height, e.padded_width, e.padded_features}},
            {"format", format_name(e.format)},
            {"type", data_type_name(e.data_bytes)},
            {"context", e.context_index}};
  if (e.has_quant)
    j["quantization"] = {{"zero_point", e.qp_zp},
                         {"scale", e.qp_scale},
                         {"limvals_min", e.limvals_min},
                         {"limvals_max", e.limvals_max}};
  else
    j["quantization"] = nullptr;
  if (e.connection == Connection::cache) {
    j["cache_id"] = e.cache_id;
    j["direction"] = e.direction == Direction::input ? "to_device" : "from_device";
  }
  return j;
}

std::string edge_text(const EdgeLayer& e) {
  std::ostringstream o;
  o << e.name << "  " << data_type_name(e.data_bytes) << " " << format_name(e.format) << "(" << e.height << "x"
    << e.width << "x" << e.features << ")";
  if (e.has_quant) o << "  zp " << e.qp_zp << " scale " << e.qp_scale;
  return o.str();
}

std::string sdk_text(const HefInfo& info) {
  if (info.sdk_version)
    return std::to_string((*info.sdk_version)[0]) + "." + std::to_string((*info.sdk_version)[1]) + "." +
           std::to_string((*info.sdk_version)[2]);
  return info.sdk_version_str.empty() ? "unknown" : info.sdk_version_str;
}

}  // namespace

json inspect_report_json(const HefInfo& info, const ChecksumReport& sums) {
  const auto& h = info.header;
  json header = {{"version", h.version},
                 {"size", h.header_size()},
                 {"proto_size", h.proto_size},
                 {"zero_point", h.zero_point()}};
  if (h.version == 1) {
    header["crc"] = h.crc;
    header["ccws_size"] = h.ccws_size;
  }
  if (h.version >= 2) {
    header["xxh3_64bits"] = hex64(h.xxh3);
    header[h.version == 3 ? "ccws_size_with_padding" : "ccws_size"] = h.ccws_size;
  }
  if (h.version == 3) {
    header["hef_padding_size"] = h.padding_size;
    header["additional_info_size"] = h.additional_info_size;
    header["proto_xxh3_64bits"] = hex64(h.proto_xxh3);
  }
  json groups = json::array();
  for (const auto& g : info.network_groups) {
    json in = json::array(), out = json::array(), caches = json::array();
    for (const auto& e : g.inputs) in.push_back(edge_json(e));
    for (const auto& e : g.outputs) out.push_back(edge_json(e));
    for (const auto& e : g.caches) caches.push_back(edge_json(e));
    groups.push_back({{"name", g.name},
                      {"name_source", g.name_source},
                      {"field10_name", g.field10_name.empty() ? json(nullptr) : json(g.field10_name)},
                      {"index", g.index},
                      {"contexts", g.contexts},
                      {"contexts_from", g.contexts_from_core_op ? "ops[].core_op" : "network group"},
                      {"inputs", in},
                      {"outputs", out},
                      {"cache_edges", caches},
                      {"sorted_outputs_order", g.sorted_outputs}});
  }
  json resources = json::array();
  for (size_t i = 0; i < info.resources.size(); ++i) {
    const auto& r = info.resources[i];
    resources.push_back({{"name", r.name},
                         {"offset", r.offset},
                         {"file_offset", r.file_offset},
                         {"size", r.size},
                         {"xxh3", hex64(r.xxhash)},
                         {"checksum", to_string(sums.resources[i])}});
  }
  json ext = json::array(), opt = json::array();
  for (const auto& e : info.extensions)
    ext.push_back(
        {{"type", e.type}, {"name", e.name}, {"supported_by_hailort", extension_supported_by_hailort(e.type)}});
  for (const auto& e : info.optional_extensions) opt.push_back({{"type", e.type}, {"name", e.name}});
  return {{"file", info.file},
          {"file_size", info.file_size},
          {"header", header},
          {"hw_arch", info.hw_arch ? json(hw_arch_name(*info.hw_arch)) : json(nullptr)},
          {"hw_arch_id", info.hw_arch ? json(*info.hw_arch) : json(nullptr)},
          {"sdk_version", sdk_text(info)},
          {"timestamp", info.timestamp ? json(*info.timestamp) : json(nullptr)},
          {"extensions", ext},
          {"optional_extensions", opt},
          {"network_groups", groups},
          {"resources", resources},
          {"checksums",
           {{"proto", to_string(sums.proto)},
            {"file", to_string(sums.file)},
            {"file_kind", sums.file_kind},
            {"file_checked_by_runtime", sums.file_checked_by_runtime}}},
          {"warnings", info.warnings},
          {"ok", !sums.any_mismatch()}};
}

std::string inspect_report_text(const HefInfo& info, const ChecksumReport& sums) {
  std::ostringstream o;
  const auto& h = info.header;
  o << info.file << "  (" << human_bytes(info.file_size) << ", " << info.file_size << " bytes)\n";
  o << "header     version " << h.version << " (" << h.header_size() << " bytes), proto " << h.proto_size
    << " bytes, resources counted from byte " << h.zero_point() << "\n";
  if (h.version == 3)
    o << "           ccws " << h.ccws_size << " (padding " << h.padding_size << "), additional_info "
      << h.additional_info_size << "\n";
  o << "arch       " << (info.hw_arch ? hw_arch_name(*info.hw_arch) : "not set") << "\n";
  o << "sdk        " << sdk_text(info) << "\n";
  if (!info.extensions.empty()) {
    o << "extensions";
    for (const auto& e : info.extensions) o << " " << (e.name.empty() ? std::to_string(e.type) : e.name);
    o << "\n";
  }
  o << "checksums  proto: " << to_string(sums.proto) << "; whole file (" << sums.file_kind
    << "): " << to_string(sums.file);
  if (sums.file == ChecksumStatus::mismatch && !sums.file_checked_by_runtime)
    o << " (the runtime does not check it for this header)";
  o << "\n";
  o << "network groups: " << info.network_groups.size() << "\n";
  for (const auto& g : info.network_groups) {
    o << "  " << (g.name.empty() ? "(no network_group_metadata name)" : g.name) << "  (" << g.contexts << " contexts)";
    if (!g.field10_name.empty() && g.field10_name != g.name)
      o << "  [field 10, not read by hailort: " << g.field10_name << "]";
    o << "\n";
    for (const auto& e : g.inputs) o << "    in   " << edge_text(e) << "\n";
    for (const auto& e : g.outputs) o << "    out  " << edge_text(e) << "\n";
    if (!g.caches.empty()) {
      std::set<int32_t> ids;
      for (const auto& e : g.caches) ids.insert(e.cache_id);
      o << "    cache edges: " << g.caches.size() << " (" << ids.size() << " cache ids)\n";
    }
  }
  o << "resources: " << info.resources.size() << "\n";
  for (size_t i = 0; i < info.resources.size(); ++i) {
    const auto& r = info.resources[i];
    o << "  " << std::left << std::setw(22) << r.name << std::right << " " << std::setw(12) << r.size << " bytes ("
      << human_bytes(r.size) << ") at " << r.file_offset << "  xxh3 " << to_string(sums.resources[i]) << "\n";
  }
  for (const auto& w : info.warnings) o << "warning: " << w << "\n";
  return o.str();
}

}  // namespace llm2hef::core::hef
