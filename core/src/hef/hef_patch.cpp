#include "llm2hef/core/atomic_output.hpp"
#include "llm2hef/core/hef/hef_patch.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/hef/proto_wire.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::hef {

namespace fs = std::filesystem;

namespace {

constexpr const char* kHailoConfig = "hailo-config.json";
// The CCW section's alignment: kept by resizing the padding (the header
// comment in RT calls it "padding for 4k alignment").
constexpr int64_t kCcwAlignment = 4096;


// The resource message with offset (1), size (2) and xxhash (4) replaced;
// every other field kept byte for byte.
std::string patched_resource(std::string_view msg, uint64_t offset, uint64_t size, uint64_t xxhash,
                             const std::string& ctx) {
  std::string out;
  bool wrote[5] = {};
  for (const auto& f : read_fields(msg, ctx)) {
    if (f.number == 1 || f.number == 2 || f.number == 4) {
      if (!wrote[f.number]) put_varint_field(out, f.number, f.number == 1 ? offset : f.number == 2 ? size : xxhash);
      wrote[f.number] = true;
    } else {
      out.append(f.raw);
    }
  }
  if (!wrote[1]) put_varint_field(out, 1, offset);
  if (!wrote[2]) put_varint_field(out, 2, size);
  if (!wrote[4]) put_varint_field(out, 4, xxhash);
  return out;
}

}  // namespace

SetConfigResult set_hailo_config(const fs::path& input, const std::string& config_text, const fs::path& output,
                                 bool replace, const std::function<void(uint64_t, uint64_t)>& progress) {
  std::vector<ContractFinding> problems = check_hailo_config_text(config_text, "new hailo-config.json");
  if (!problems.empty()) {
    std::string msg = "the new hailo-config.json is refused:";
    for (const auto& p : problems) msg += "\n  " + p.message;
    throw BadInput(msg);
  }
  std::error_code ec;
  if (fs::exists(output, ec)) {
    if (fs::equivalent(input, output, ec)) throw UsageError(output.string() + ": is the input; write to another file");
    if (!replace) throw UsageError(output.string() + ": already exists (pass --force to replace it)");
  }

  const auto src = open_file_source(input.string());
  const HefInfo info = read_hef(*src);
  const HefHeader& h = info.header;
  if (h.version != 3)
    throw Unsupported(input.string() + ": header version " + std::to_string(h.version) +
                      "; set-config edits version 3 HEFs (what DFC 5.x writes), whose header has an additional_info section");
  const Resource* old_cfg = info.resource(kHailoConfig);
  if (!old_cfg) throw BadInput(input.string() + ": has no hailo-config.json resource to replace");

  // Everything from the old zero point on is copied unchanged.
  const uint64_t old_zero = h.zero_point();
  const uint64_t tail = info.file_size - old_zero;
  const uint64_t ccws_real = h.ccws_size - h.padding_size;
  if (tail < ccws_real)
    throw BadInput(input.string() + ": the file ends inside its CCW section (ccws_size_with_padding - hef_padding_size = " +
                   std::to_string(ccws_real) + " bytes, " + std::to_string(tail) + " present)");

  SetConfigResult res;
  res.old_size = info.file_size;
  res.config_offset = tail;  // relative to the zero point, right after the copied bytes
  res.config_size = config_text.size();
  res.config_xxh3 = XXH3_64bits(config_text.data(), config_text.size());
  res.dead_bytes = old_cfg->size;

  // The new proto: top-level fields verbatim, the one resource re-encoded.
  const std::string old_proto = read_proto_bytes(*src, h);
  const std::string ctx = input.string() + ": ProtoHEFHef";
  std::string proto;
  proto.reserve(old_proto.size() + 32);
  size_t resource_index = 0;
  for (const auto& f : read_fields(old_proto, ctx)) {
    if (f.number == 7 && f.type == WireType::bytes && resource_index++ == old_cfg->proto_index) {
      put_bytes_field(proto, 7,
                      patched_resource(f.bytes, res.config_offset, res.config_size, res.config_xxh3,
                                       ctx + ".external_resources"));
    } else {
      proto.append(f.raw);
    }
  }
  if (proto.size() > UINT32_MAX) throw BadInput(input.string() + ": the new proto would exceed 4 GB");

  // Keep the zero point (the CCWs' start) at the same offset modulo 4 KiB.
  int64_t padding = static_cast<int64_t>(h.padding_size) + static_cast<int64_t>(old_proto.size()) -
                    static_cast<int64_t>(proto.size());
  while (padding < 0) padding += kCcwAlignment;

  HefHeader nh = h;
  nh.proto_size = static_cast<uint32_t>(proto.size());
  nh.padding_size = static_cast<uint32_t>(padding);
  nh.ccws_size = ccws_real + nh.padding_size;
  nh.additional_info_size = tail - ccws_real + config_text.size();
  nh.proto_xxh3 = h.proto_xxh3 != 0 ? XXH3_64bits(proto.data(), proto.size()) : 0;

  AtomicFile out(output, replace);
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  if (!state) throw InternalError("XXH3_createState failed");
  XXH3_64bits_reset(state.get());
  uint64_t pos = 56;
  auto emit = [&](const void* data, size_t n) {
    out.write_at(pos, data, n);
    XXH3_64bits_update(state.get(), data, n);
    pos += n;
  };
  emit(proto.data(), proto.size());
  constexpr size_t kBlock = 8u << 20;
  // The padding can be as large as the file claims (up to 4 GiB): zeros in blocks.
  const std::vector<char> zeros(static_cast<size_t>(std::min<uint64_t>(nh.padding_size, kBlock)), '\0');
  for (uint64_t left = nh.padding_size; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
    emit(zeros.data(), n);
    left -= n;
  }
  std::vector<char> buf(static_cast<size_t>(std::min<uint64_t>(tail, kBlock)));
  for (uint64_t done = 0; done < tail;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(tail - done, kBlock));
    src->read(old_zero + done, buf.data(), n);
    emit(buf.data(), n);
    done += n;
    if (progress) progress(done, tail);
  }
  emit(config_text.data(), config_text.size());
  nh.xxh3 = XXH3_64bits_digest(state.get());
  const std::string header = serialize_hef_header_v3(nh);
  out.write_at(0, header.data(), header.size());
  res.new_size = pos;

  // Read the result back before it replaces anything: it must parse, and the
  // new resource must be where the proto says.
  {
    const auto check = open_file_source(out.path().string());
    const HefInfo again = read_hef(*check);
    const Resource* r = again.resource(kHailoConfig);
    if (!r || r->size != config_text.size() || xxh3_of_range(*check, r->file_offset, r->size) != res.config_xxh3)
      throw InternalError(output.string() + ": the rewritten HEF does not read back (hailo-config.json misplaced)");
  }
  out.commit();
  return res;
}

}  // namespace llm2hef::core::hef
