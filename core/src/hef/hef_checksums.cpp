// XXH3-64 over byte ranges of a HEF and the checksum report of `hef inspect`
// (hailo-contract.md section 10): streamed in blocks, so memory stays flat.
#include <xxhash.h>
#include <zlib.h>

#include <memory>
#include <vector>

#include "llm2hef/core/hef/hef_file.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::hef {

uint64_t xxh3_of_range(const ByteSource& src, uint64_t offset, uint64_t size,
                       const std::function<void(uint64_t)>& progress) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  if (!state) throw InternalError("XXH3_createState failed");
  XXH3_64bits_reset(state.get());
  constexpr size_t kBlock = 8u << 20;
  std::vector<char> buf(static_cast<size_t>(std::min<uint64_t>(size, kBlock)));
  uint64_t done = 0;
  while (done < size) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, kBlock));
    src.read(offset + done, buf.data(), n);
    XXH3_64bits_update(state.get(), buf.data(), n);
    done += n;
    if (progress) progress(done);
  }
  return XXH3_64bits_digest(state.get());
}

uint32_t crc32_of_range(const ByteSource& src, uint64_t offset, uint64_t size,
                        const std::function<void(uint64_t)>& progress) {
  constexpr size_t kBlock = 8u << 20;
  std::vector<unsigned char> buf(static_cast<size_t>(std::min<uint64_t>(size, kBlock)));
  uLong crc = ::crc32(0L, Z_NULL, 0);
  uint64_t done = 0;
  while (done < size) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, kBlock));
    src.read(offset + done, buf.data(), n);
    crc = ::crc32(crc, buf.data(), static_cast<uInt>(n));
    done += n;
    if (progress) progress(done);
  }
  return static_cast<uint32_t>(crc);
}

std::string to_string(ChecksumStatus s) {
  switch (s) {
    case ChecksumStatus::ok: return "ok";
    case ChecksumStatus::mismatch: return "mismatch";
    case ChecksumStatus::absent: return "absent";
    case ChecksumStatus::not_checked: return "not checked";
    case ChecksumStatus::unsupported: return "not verified (MD5 of v0 headers is not implemented)";
  }
  return "?";
}

bool ChecksumReport::any_mismatch() const {
  if (proto == ChecksumStatus::mismatch) return true;
  if (file == ChecksumStatus::mismatch && file_checked_by_runtime) return true;
  for (auto s : resources)
    if (s == ChecksumStatus::mismatch) return true;
  return false;
}

ChecksumReport verify_checksums(const ByteSource& src, const HefInfo& info, uint64_t resource_limit, bool whole_file,
                                const std::function<void(uint64_t)>& progress) {
  ChecksumReport rep;
  const HefHeader& h = info.header;
  // read_hef() already refused a proto hash mismatch.
  rep.proto = (h.version == 3 && h.proto_xxh3 != 0) ? ChecksumStatus::ok : ChecksumStatus::absent;
  uint64_t done = 0;
  auto step = [&](uint64_t base) {
    return [&, base](uint64_t n) {
      if (progress) progress(base + n);
    };
  };
  for (const auto& r : info.resources) {
    if (r.xxhash == 0) {
      rep.resources.push_back(ChecksumStatus::absent);
    } else if (r.size > resource_limit) {
      rep.resources.push_back(ChecksumStatus::not_checked);
    } else {
      const uint64_t got = xxh3_of_range(src, r.file_offset, r.size, step(done));
      done += r.size;
      rep.resources.push_back(got == r.xxhash ? ChecksumStatus::ok : ChecksumStatus::mismatch);
    }
  }
  switch (h.version) {
    case 0: rep.file_kind = "md5"; break;
    case 1: rep.file_kind = "crc32"; break;
    default: rep.file_kind = "xxh3"; break;
  }
  // hailort checks the whole-file sum at load for v0-v2, and for v3 only
  // without a proto hash (hef.cpp 556-606).
  rep.file_checked_by_runtime = h.version < 3 || h.proto_xxh3 == 0;
  const uint64_t hs = h.header_size();
  if (!whole_file) {
    rep.file = ChecksumStatus::not_checked;
  } else if (h.version == 0) {
    rep.file = ChecksumStatus::unsupported;
  } else if (h.version == 1) {
    // zlib's CRC-32 over everything after the 28-byte header, stored big-endian.
    const uint32_t got = crc32_of_range(src, hs, info.file_size - hs, step(done));
    rep.file = got == h.crc ? ChecksumStatus::ok : ChecksumStatus::mismatch;
  } else {
    const uint64_t got = xxh3_of_range(src, hs, info.file_size - hs, step(done));
    rep.file = got == h.xxh3 ? ChecksumStatus::ok : ChecksumStatus::mismatch;
  }
  return rep;
}

}  // namespace llm2hef::core::hef
