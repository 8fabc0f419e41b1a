// ProtoHEFHef decoding by field number (hailo-contract.md section 10) and
// resource bounds. Every size and offset is checked against the file before
// it is used; anything malformed is a BadInput naming the file and the field.
#include <xxhash.h>

#include <map>
#include <set>
#include <unordered_set>

#include "llm2hef/core/hef/hef_file.hpp"
#include "llm2hef/core/hef/proto_wire.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::hef {

namespace {

// Field accessors that refuse a wire type the schema does not allow.
std::string_view as_message(const WireField& f, const std::string& ctx) {
  if (f.type != WireType::bytes)
    throw BadInput(ctx + ": field " + std::to_string(f.number) + " should be length-delimited");
  return f.bytes;
}

uint64_t as_uint(const WireField& f, const std::string& ctx) {
  if (f.type != WireType::varint) throw BadInput(ctx + ": field " + std::to_string(f.number) + " should be a varint");
  return f.value;
}

uint32_t as_u32(const WireField& f, const std::string& ctx) { return static_cast<uint32_t>(as_uint(f, ctx)); }

float as_float(const WireField& f, const std::string& ctx) {
  if (f.type != WireType::fixed32) throw BadInput(ctx + ": field " + std::to_string(f.number) + " should be a float");
  return fixed32_as_float(f.value);
}

struct EdgeBase {
  uint32_t h = 0, ph = 0, w = 0, pw = 0, f = 0, pf = 0, format = 0, data_bytes = 0;
};

EdgeBase parse_edge_base(std::string_view msg, const std::string& ctx) {
  EdgeBase b;
  for (const auto& f : read_fields(msg, ctx)) {
    switch (f.number) {
      case 1: b.h = as_u32(f, ctx); break;
      case 2: b.ph = as_u32(f, ctx); break;
      case 3: b.w = as_u32(f, ctx); break;
      case 4: b.pw = as_u32(f, ctx); break;
      case 5: b.f = as_u32(f, ctx); break;
      case 6: b.pf = as_u32(f, ctx); break;
      case 7: b.format = as_u32(f, ctx); break;
      case 12: b.data_bytes = as_u32(f, ctx); break;
      default: break;
    }
  }
  return b;
}

void apply_base(EdgeLayer& e, const EdgeBase& b) {
  e.height = b.h;
  e.padded_height = b.ph;
  e.width = b.w;
  e.padded_width = b.pw;
  e.features = b.f;
  e.padded_features = b.pf;
  e.format = b.format;
  e.data_bytes = b.data_bytes;
}

// ProtoHEFEdgeLayerInfo {name=1, edge_layer_base=2, numeric_info=3} and
// ProtoHEFEdgeLayerMux {name=1, edge_layer_base=2}.
void parse_layer_info(std::string_view msg, EdgeLayer& e, bool with_numeric, const std::string& ctx) {
  for (const auto& f : read_fields(msg, ctx)) {
    if (f.number == 1) {
      e.name = std::string(as_message(f, ctx));
    } else if (f.number == 2) {
      apply_base(e, parse_edge_base(as_message(f, ctx), ctx + ".edge_layer_base"));
    } else if (f.number == 3 && with_numeric) {
      const std::string nctx = ctx + ".numeric_info";
      e.has_quant = true;
      for (const auto& n : read_fields(as_message(f, nctx), nctx)) {
        if (n.number == 1) e.qp_zp = as_float(n, nctx);
        if (n.number == 2) e.qp_scale = as_float(n, nctx);
        if (n.number == 3) e.limvals_min = as_float(n, nctx);
        if (n.number == 4) e.limvals_max = as_float(n, nctx);
      }
    }
  }
}

EdgeLayer parse_edge_layer(std::string_view msg, uint32_t context_index, const std::string& ctx) {
  EdgeLayer e;
  e.context_index = context_index;
  for (const auto& f : read_fields(msg, ctx)) {
    switch (f.number) {
      case 1: e.direction = as_uint(f, ctx) == 0 ? Direction::input : Direction::output; break;
      case 2: e.layer_type = as_u32(f, ctx); break;
      case 3: parse_layer_info(as_message(f, ctx), e, true, ctx + ".layer_info"); break;
      case 4: parse_layer_info(as_message(f, ctx), e, false, ctx + ".layer_mux"); break;
      case 8: {
        const std::string pctx = ctx + ".layer_planes";
        for (const auto& p : read_fields(as_message(f, ctx), pctx)) {
          if (p.number == 1) e.name = std::string(as_message(p, pctx));
          if (p.number == 4) e.height = as_u32(p, pctx);
          if (p.number == 5) e.width = as_u32(p, pctx);
          if (p.number == 6) e.features = as_u32(p, pctx);
        }
        break;
      }
      case 5: {
        const std::string cctx = ctx + ".context_switch_info";
        for (const auto& c : read_fields(as_message(f, ctx), cctx)) {
          if (c.number == 3) {
            const uint64_t t = as_uint(c, cctx);
            e.connection = t <= 3 ? static_cast<Connection>(t) : Connection::other;
          }
          // int32 on the wire: negative values are sign-extended to 64 bits.
          if (c.number == 9) e.cache_id = static_cast<int32_t>(static_cast<uint32_t>(as_uint(c, cctx)));
        }
        break;
      }
      default: break;
    }
  }
  return e;
}

struct GroupParts {
  size_t contexts = 0;
  std::vector<EdgeLayer> edges;
  std::vector<std::string> sorted_outputs;
};

// ProtoHEFContext {context_index=1, metadata=3 {edge_layers=2}}.
void parse_context(std::string_view msg, GroupParts& parts, const std::string& ctx) {
  ++parts.contexts;
  uint32_t index = 0;
  std::vector<std::string_view> metadata;
  for (const auto& f : read_fields(msg, ctx)) {
    if (f.number == 1) index = as_u32(f, ctx);
    if (f.number == 3) metadata.push_back(as_message(f, ctx));
  }
  for (std::string_view m : metadata) {
    const std::string mctx = ctx + ".metadata";
    size_t k = 0;
    for (const auto& f : read_fields(m, mctx))
      if (f.number == 2)
        parts.edges.push_back(
            parse_edge_layer(as_message(f, mctx), index, mctx + ".edge_layers[" + std::to_string(k++) + "]"));
  }
}

// ProtoHEFNetworkGroupMetadata {network_group_name=1}.
std::string metadata_name(std::string_view msg, const std::string& ctx) {
  std::string name;
  for (const auto& m : read_fields(msg, ctx))
    if (m.number == 1) name = std::string(as_message(m, ctx));
  return name;
}

// The fields ProtoHEFNetworkGroup and ProtoHEFCoreOp share: contexts=3,
// sorted_outputs_order=4.
void parse_core_fields(const WireField& f, GroupParts& parts, const std::string& ctx) {
  if (f.number == 3) {
    parse_context(as_message(f, ctx), parts, ctx + ".contexts[" + std::to_string(parts.contexts) + "]");
  } else if (f.number == 4) {
    parts.sorted_outputs.emplace_back(as_message(f, ctx));
  }
}

// hailort reads a multi-layout arch's group name from partial_network_groups[0]
// (hef.cpp 761-763, 3841-3843).
bool multi_layout_arch(std::optional<uint32_t> arch) { return arch && (*arch == 3 || *arch == 4); }

NetworkGroup parse_network_group(std::string_view msg, size_t position, bool net_flow, std::optional<uint32_t> arch,
                                 const std::string& ctx) {
  NetworkGroup g;
  g.index = static_cast<uint32_t>(position);
  GroupParts top, core;
  std::string top_name, partial_name;
  bool has_partial = false, core_found = false;
  size_t op = 0;
  for (const auto& f : read_fields(msg, ctx)) {
    if (f.number == 1) {
      top_name = metadata_name(as_message(f, ctx), ctx + ".network_group_metadata");
    } else if (f.number == 10) {
      g.field10_name = std::string(as_message(f, ctx));
    } else if (f.number == 11) {
      g.index = as_u32(f, ctx);
    } else if (f.number == 7) {
      // ProtoHEFPartialNetworkGroup {network_group=1 {network_group_metadata=1}}: only [0] is read.
      const std::string pctx = ctx + ".partial_network_groups";
      const std::string_view partial = as_message(f, ctx);
      if (has_partial) continue;
      has_partial = true;
      for (const auto& p : read_fields(partial, pctx)) {
        if (p.number != 1) continue;
        for (const auto& n : read_fields(as_message(p, pctx), pctx + ".network_group"))
          if (n.number == 1)
            partial_name = metadata_name(as_message(n, pctx), pctx + ".network_group.network_group_metadata");
      }
    } else if (f.number == 8) {
      // ProtoHEFOp {core_op=4}: hailort takes the first op that is a core op.
      const std::string octx = ctx + ".ops[" + std::to_string(op++) + "]";
      for (const auto& o : read_fields(as_message(f, ctx), octx)) {
        if (o.number != 4 || core_found) continue;
        core_found = true;
        const std::string cctx = octx + ".core_op";
        for (const auto& c : read_fields(as_message(o, octx), cctx)) parse_core_fields(c, core, cctx);
      }
    } else {
      parse_core_fields(f, top, ctx);
    }
  }
  if (multi_layout_arch(arch)) {
    g.name = partial_name;
    g.name_source = "partial_network_groups[0].network_group.network_group_metadata.network_group_name";
  } else {
    g.name = top_name;
    g.name_source = "network_group_metadata.network_group_name";
  }
  g.core_op_in_ops = core_found;
  g.top_level_contexts = top.contexts;
  // As hailort: with HAILO_NET_FLOW the core op's contexts, otherwise the
  // top-level ones. A net-flow group without a core op is reported by `hef
  // check`; its top-level contexts are shown so the rest can be inspected.
  g.contexts_from_core_op = net_flow && core_found;
  GroupParts& parts = g.contexts_from_core_op ? core : top;
  g.contexts = parts.contexts;
  g.sorted_outputs = std::move(parts.sorted_outputs);
  // An edge appears in every context that uses it; report each once.
  std::set<std::pair<std::string, int>> seen;
  for (auto& e : parts.edges) {
    if (!seen.insert({e.name, static_cast<int>(e.direction) * 10 + static_cast<int>(e.connection)}).second) continue;
    if (e.connection == Connection::boundary)
      (e.direction == Direction::input ? g.inputs : g.outputs).push_back(std::move(e));
    else if (e.connection == Connection::cache)
      g.caches.push_back(std::move(e));
  }
  return g;
}

void parse_header_message(std::string_view msg, HefInfo& info, const std::string& ctx) {
  for (const auto& f : read_fields(msg, ctx)) {
    switch (f.number) {
      case 1: info.hw_arch = as_u32(f, ctx); break;
      case 2: info.timestamp = as_uint(f, ctx); break;
      case 3: info.sdk_version_str = std::string(as_message(f, ctx)); break;
      case 4: info.format_version = as_uint(f, ctx); break;
      case 5: {
        std::array<uint32_t, 3> v{};
        for (const auto& s : read_fields(as_message(f, ctx), ctx + ".sdk_version"))
          if (s.number >= 1 && s.number <= 3) v[s.number - 1] = as_u32(s, ctx + ".sdk_version");
        info.sdk_version = v;
        break;
      }
      default: break;
    }
  }
}

Extension parse_extension(std::string_view msg, const std::string& ctx) {
  Extension e;
  for (const auto& f : read_fields(msg, ctx)) {
    if (f.number == 1) e.type = as_u32(f, ctx);
    if (f.number == 2) e.name = std::string(as_message(f, ctx));
  }
  return e;
}

Resource parse_resource(std::string_view msg, const std::string& ctx) {
  Resource r;
  for (const auto& f : read_fields(msg, ctx)) {
    if (f.number == 1) r.offset = as_uint(f, ctx);
    if (f.number == 2) r.size = as_uint(f, ctx);
    if (f.number == 3) r.name = std::string(as_message(f, ctx));
    if (f.number == 4) r.xxhash = as_uint(f, ctx);
  }
  return r;
}

}  // namespace

const Resource* HefInfo::resource(const std::string& n) const {
  for (const auto& r : resources)
    if (r.name == n) return &r;
  return nullptr;
}

bool HefInfo::has_extension(uint32_t type) const {
  for (const auto& e : extensions)
    if (e.type == type) return true;
  return false;
}

bool extension_supported_by_hailort(uint32_t type) {
  // Every ProtoHEFExtensionType but TEST_ONE (7), MULTI_NETWORK_VARIABLE_BATCH_SIZE (8) and UNUSED.
  return type <= 35 && type != 7 && type != 8;
}

std::string extension_type_name(uint32_t type) {
  static const char* const kNames[] = {"ABBALE",
                                       "POSTED_WRITES",
                                       "DDR",
                                       "PADDED_DDR_BUFFERS",
                                       "IS_MULTI_CONTEXTS",
                                       "COMPRESSED_PARAMS",
                                       "TRANSPOSE_COMPONENT",
                                       "TEST_ONE",
                                       "MULTI_NETWORK_VARIABLE_BATCH_SIZE",
                                       "IS_NMS_MULTI_CONTEXT",
                                       "OFFLOAD_ARGMAX",
                                       "HW_PADDING",
                                       "KO_RUN_ASAP",
                                       "HAILO_NET_FLOW",
                                       "HAILO_NET_FLOW_YOLOV5_NMS",
                                       "HAILO_NET_FLOW_YOLOX_NMS",
                                       "HAILO_NET_FLOW_SSD_NMS",
                                       "HAILO_NET_FLOW_IOU_NMS",
                                       "WRITE_DATA_BY_TYPE",
                                       "NMS_OUTPUT_BURST",
                                       "DUAL_DIRECTION_STREAM_INDEX",
                                       "HAILO_NET_FLOW_ARGMAX",
                                       "HAILO_NET_FLOW_SOFTMAX",
                                       "ALIGNED_FORMAT_TYPE",
                                       "HAILO_NET_FLOW_YOLOV5_SEG_NMS",
                                       "OUTPUT_SCALE_PER_FEATURE",
                                       "PERIPH_CALCULATION_IN_HAILORT",
                                       "HAILO_NET_FLOW_YOLOV8_NMS",
                                       "BATCH_REGISTER_CONFIG",
                                       "HAILO_NET_FLOW_BBOX_DECODING",
                                       "CCW_PTR_SQUEEZE",
                                       "EXTERNAL_RESOURCES",
                                       "SHARED_CONFIG",
                                       "CSM_CRC",
                                       "ENABLE_CONFIG_CHANNELS",
                                       "STRICT_RUNTIME_VERSIONING"};
  if (type < sizeof kNames / sizeof kNames[0]) return kNames[type];
  return type == 0xFFFF ? "UNUSED" : "";
}

std::string hw_arch_devices(uint32_t arch) {
  switch (arch) {
    case 100: return "Hailo-8 A0";
    case 0:
    case 1:
    case 2:
    case 101:
    case 102: return "Hailo-8";
    case 3: return "Hailo-8L, Hailo-8";
    case 103:
    case 104:
    case 105: return "Hailo-15H, Hailo-10H";
    case 6:
    case 106: return "Hailo-15L";
    case 4: return "Hailo-15M, Hailo-15H, Hailo-10H";
    case 108: return "Hailo-12L";
    default: return "";
  }
}

bool hw_arch_runs_on_hailo10h(uint32_t arch) { return hw_arch_devices(arch).find("Hailo-10H") != std::string::npos; }

const NetworkGroup* HefInfo::group_with_suffix(const std::string& suffix) const {
  for (const auto& g : network_groups)
    if (g.name.size() >= suffix.size() && g.name.compare(g.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return &g;
  return nullptr;
}

std::string hw_arch_name(uint32_t arch) {
  switch (arch) {
    case 0: return "HAILO8";
    case 1: return "HAILO8P";
    case 2: return "HAILO8R";
    case 3: return "HAILO8L";
    case 4: return "HAILO15M";
    case 5: return "HAILO10H (deprecated id, no longer in hef.proto)";
    case 6: return "HAILO15L";
    case 100: return "SAGE_A0";
    case 101: return "SAGE_B0";
    case 102: return "PAPRIKA_B0";
    case 103: return "HAILO1XH (Hailo-15H / Hailo-10H)";
    case 104: return "GINGER";
    case 105: return "LAVENDER";
    case 106: return "PLUTO";
    case 108: return "MARS";
    default: return "unknown (" + std::to_string(arch) + ")";
  }
}

std::string format_name(uint32_t format) {
  switch (format) {
    case 0: return "NHWC";
    case 1: return "FRAMES";
    case 2: return "FLAT";
    case 3: return "FCR";
    case 4: return "BAYER_RGB";
    default: return "format " + std::to_string(format);
  }
}

std::string data_type_name(uint32_t data_bytes) {
  switch (data_bytes) {
    case 1: return "UINT8";
    case 2: return "UINT16";
    case 4: return "FLOAT32";
    default: return "unknown (" + std::to_string(data_bytes) + " bytes)";
  }
}

std::string read_proto_bytes(const ByteSource& src, const HefHeader& h) {
  std::string proto(h.proto_size, '\0');
  src.read(h.header_size(), proto.data(), proto.size());
  return proto;
}

HefInfo read_hef(const ByteSource& src) {
  HefInfo info;
  info.file = src.name();
  info.file_size = src.size();
  uint8_t head[kHefMaxHeaderSize] = {};
  const size_t head_n = static_cast<size_t>(std::min<uint64_t>(info.file_size, kHefMaxHeaderSize));
  src.read(0, head, head_n);
  info.header = parse_hef_header({head, head_n}, info.file_size, info.file);
  const HefHeader& h = info.header;

  // The runtime checks that the sections add up to the file, except for v3
  // files carrying a proto hash (the rest is then checked by firmware and
  // per resource). Follow it: an error where it fails, a warning otherwise.
  const uint64_t declared = h.declared_file_size();
  if (declared != info.file_size) {
    const std::string what =
        info.file + ": header sizes (hef_proto_size + ccws + additional_info = " + std::to_string(declared) +
        " bytes with the header) do not match the file size (" + std::to_string(info.file_size) + " bytes)";
    if (h.version != 3 || h.proto_xxh3 == 0) throw BadInput(what);
    info.warnings.push_back(what + "; the runtime does not check this when proto_xxh3_64bits is set");
  }

  const std::string proto = read_proto_bytes(src, h);
  if (h.version == 3 && h.proto_xxh3 != 0) {
    const uint64_t actual = XXH3_64bits(proto.data(), proto.size());
    if (actual != h.proto_xxh3)
      throw BadInput(info.file + ": header field proto_xxh3_64bits does not match the proto bytes (stored " +
                     std::to_string(h.proto_xxh3) + ", computed " + std::to_string(actual) +
                     "); the runtime refuses this file (\"HEF proto xxhash does not match\")");
  }

  const std::string ctx = info.file + ": ProtoHEFHef";
  // Groups are decoded last: how hailort reads them depends on the
  // extensions (HAILO_NET_FLOW) and the header's hw_arch, which may follow them.
  std::vector<std::string_view> groups;
  // Names seen so far: a scan of info.resources per resource made a HEF of
  // 40,000 resources (1.7 MB) quadratic.
  std::unordered_set<std::string> resource_names;
  for (const auto& f : read_fields(proto, ctx)) {
    switch (f.number) {
      case 1: parse_header_message(as_message(f, ctx), info, ctx + ".header"); break;
      case 2: groups.push_back(as_message(f, ctx)); break;
      case 5: info.extensions.push_back(parse_extension(as_message(f, ctx), ctx + ".extensions")); break;
      case 6:
        info.optional_extensions.push_back(parse_extension(as_message(f, ctx), ctx + ".optional_extensions"));
        break;
      case 7: {
        const std::string rctx = ctx + ".external_resources[" + std::to_string(info.resources.size()) + "]";
        Resource r = parse_resource(as_message(f, ctx), rctx);
        r.proto_index = info.resources.size();
        const uint64_t zero = h.zero_point();
        uint64_t end = 0;
        if (__builtin_add_overflow(zero, r.offset, &r.file_offset) ||
            __builtin_add_overflow(r.file_offset, r.size, &end) || end > info.file_size)
          throw BadInput(rctx + " ('" + r.name + "'): offset " + std::to_string(r.offset) + " + size " +
                         std::to_string(r.size) + " from the zero point " + std::to_string(zero) +
                         " runs past the end of the file (" + std::to_string(info.file_size) + " bytes)");
        // v0 counts from byte 0, so the zero point alone does not keep resources out of header and proto.
        if (r.file_offset < h.header_size() + static_cast<uint64_t>(h.proto_size))
          throw BadInput(rctx + " ('" + r.name + "'): offset " + std::to_string(r.offset) +
                         " points into the header or proto");
        if (!resource_names.insert(r.name).second)
          throw BadInput(rctx + ": resource name '" + r.name + "' appears twice");
        info.resources.push_back(std::move(r));
        break;
      }
      default: break;
    }
  }
  const bool net_flow = info.has_extension(kExtHailoNetFlow);
  for (size_t i = 0; i < groups.size(); ++i)
    info.network_groups.push_back(
        parse_network_group(groups[i], i, net_flow, info.hw_arch, ctx + ".network_groups[" + std::to_string(i) + "]"));
  return info;
}

std::string read_resource(const ByteSource& src, const Resource& r, uint64_t max_bytes) {
  if (r.size > max_bytes)
    throw BadInput(src.name() + ": resource '" + r.name + "' is " + std::to_string(r.size) + " bytes, more than the " +
                   std::to_string(max_bytes) + " llm2hef reads for it");
  std::string out(static_cast<size_t>(r.size), '\0');
  src.read(r.file_offset, out.data(), out.size());
  return out;
}

}  // namespace llm2hef::core::hef
