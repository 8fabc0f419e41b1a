// Reading a HEF: the header, the ProtoHEFHef message (only the fields llm2hef
// reports, by field number; hailo-contract.md section 10) and the external
// resources. Only the byte ranges needed are read (pread), so a multi-GB HEF
// costs its header, its proto and whatever resources are asked for.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llm2hef/core/hef/hef_header.hpp"

namespace llm2hef::core::hef {

// Random access to the bytes of a HEF: a file (pread) or memory (tests, fuzzing).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at offset; throws BadInput when they are not there.
  virtual void read(uint64_t offset, void* out, size_t n) const = 0;
  virtual const std::string& name() const = 0;
};

std::unique_ptr<ByteSource> open_file_source(const std::string& path);
std::unique_ptr<ByteSource> memory_source(std::string bytes, std::string name);

enum class Direction { input, output };
enum class Connection { boundary = 0, intermediate = 1, ddr = 2, cache = 3, other = 99 };

struct EdgeLayer {
  std::string name;
  Direction direction = Direction::input;
  Connection connection = Connection::boundary;
  uint32_t layer_type = 0;  // 0 info, 1 mux, 2 planes
  uint32_t height = 0, width = 0, features = 0;
  uint32_t padded_height = 0, padded_width = 0, padded_features = 0;
  uint32_t format = 0;      // edge_layer_base.format (3 = FCR, 0 = NHWC / tf_rgb, ...)
  uint32_t data_bytes = 0;  // bytes per element: 1 = UINT8, 2 = UINT16
  bool has_quant = false;
  float qp_zp = 0, qp_scale = 0, limvals_min = 0, limvals_max = 0;
  int32_t cache_id = -1;
  uint32_t context_index = 0;

  uint64_t frame_elements() const { return static_cast<uint64_t>(height) * width * features; }
};

struct NetworkGroup {
  // The name hailort v5.2.0 reads (Hef::Impl::get_network_groups_names,
  // hef.cpp 3835-3847): network_group_metadata.network_group_name of the
  // top-level group, or of partial_network_groups[0] on multi-layout archs
  // (HAILO8L, HAILO15M). Empty when the HEF does not carry it.
  std::string name;
  // ProtoHEFNetworkGroup field 10: never read by hailort v5.2.0; information only.
  std::string field10_name;
  std::string name_source;  // where `name` was read, e.g. "network_group_metadata.network_group_name"
  uint32_t index = 0;
  size_t contexts = 0;
  // Where the contexts were read: with HAILO_NET_FLOW (13) hailort takes the
  // core op from ops[i].core_op (hef.cpp 945-953), otherwise the top-level contexts.
  bool core_op_in_ops = false;                     // some ops[i] carries a core_op
  size_t top_level_contexts = 0;                   // contexts directly in the group
  bool contexts_from_core_op = false;              // the contexts reported come from ops[i].core_op
  std::vector<EdgeLayer> inputs, outputs, caches;  // boundary in, boundary out, cache edges
  std::vector<std::string> sorted_outputs;         // sorted_outputs_order, when present
};

struct Resource {
  std::string name;
  uint64_t offset = 0;  // as stored: relative to the header's zero point
  uint64_t size = 0;
  uint64_t xxhash = 0;  // 0 = none
  uint64_t file_offset = 0;
  size_t proto_index = 0;  // position among ProtoHEFHef.external_resources
};

struct Extension {
  uint32_t type = 0;
  std::string name;
};

struct HefInfo {
  std::string file;
  uint64_t file_size = 0;
  HefHeader header;
  std::optional<uint32_t> hw_arch;
  std::string sdk_version_str;
  std::optional<uint64_t> timestamp, format_version;
  std::optional<std::array<uint32_t, 3>> sdk_version;  // major, minor, revision
  std::vector<Extension> extensions, optional_extensions;
  std::vector<NetworkGroup> network_groups;
  std::vector<Resource> resources;
  std::vector<std::string> warnings;  // layout oddities the runtime tolerates

  const Resource* resource(const std::string& name) const;
  bool has_extension(uint32_t type) const;
  const NetworkGroup* group_with_suffix(const std::string& suffix) const;
};

std::string hw_arch_name(uint32_t arch);
std::string format_name(uint32_t format);
std::string data_type_name(uint32_t data_bytes);

// Parses the header and the proto of `src`; validates every size and offset
// (resources inside the file, proto checksum when the header has one).
HefInfo read_hef(const ByteSource& src);

// The whole proto message as stored.
std::string read_proto_bytes(const ByteSource& src, const HefHeader& h);

// A resource's bytes; refuses resources larger than max_bytes (BadInput).
std::string read_resource(const ByteSource& src, const Resource& r, uint64_t max_bytes);

// XXH3-64 (no seed) of [offset, offset + size), streamed in blocks;
// `progress` gets the bytes done so far.
uint64_t xxh3_of_range(const ByteSource& src, uint64_t offset, uint64_t size,
                       const std::function<void(uint64_t)>& progress = {});

// Extension type indexes (hailort hef.proto ProtoHEFExtensionType).
inline constexpr uint32_t kExtHailoNetFlow = 13;
inline constexpr uint32_t kExtPeriphCalculationInHailort = 26;
inline constexpr uint32_t kExtExternalResources = 31;
inline constexpr uint32_t kExtStrictRuntimeVersioning = 35;
// hailort v5.2.0 SUPPORTED_EXTENSIONS (hef_internal.hpp 202-237).
bool extension_supported_by_hailort(uint32_t type);
// ProtoHEFExtensionType name of a type index ("" when unknown).
std::string extension_type_name(uint32_t type);
// Whether a HEF of this hw_arch runs on a Hailo-10H: DeviceBase::
// hef_arch_to_device_compatible_archs (device_internal.cpp 736-762).
bool hw_arch_runs_on_hailo10h(uint32_t arch);
// The device families hailort lets this hw_arch run on ("" when none).
std::string hw_arch_devices(uint32_t arch);

// CRC-32 of v1 headers: zlib's crc32 (reflected 0xEDB88320, init and xorout
// 0xFFFFFFFF; hailort common/utils.hpp 505-567), streamed.
uint32_t crc32_of_range(const ByteSource& src, uint64_t offset, uint64_t size,
                        const std::function<void(uint64_t)>& progress = {});

enum class ChecksumStatus { ok, mismatch, absent, not_checked, unsupported };
std::string to_string(ChecksumStatus s);

struct ChecksumReport {
  ChecksumStatus proto = ChecksumStatus::absent;      // v3 proto_xxh3_64bits
  ChecksumStatus file = ChecksumStatus::not_checked;  // the header's whole-file hash (xxh3, crc32 or md5)
  std::string file_kind;                              // "xxh3", "crc32", "md5"
  // The runtime verifies the whole-file hash for v0, v1, v2 and v3 without a
  // proto hash; for v3 with one a mismatch is reported but is not an error.
  bool file_checked_by_runtime = false;
  std::vector<ChecksumStatus> resources;  // one per HefInfo::resources
  bool any_mismatch() const;
};

// Resources no larger than `resource_limit` bytes are hashed (all of them with
// UINT64_MAX); the whole-file hash only when `whole_file`. The proto hash is
// verified by read_hef() already and reported as ok here.
ChecksumReport verify_checksums(const ByteSource& src, const HefInfo& info, uint64_t resource_limit, bool whole_file,
                                const std::function<void(uint64_t)>& progress = {});

}  // namespace llm2hef::core::hef
