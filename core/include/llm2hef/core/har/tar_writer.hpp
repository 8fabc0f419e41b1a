// Tar archives written as streams, the counterpart of tar_stream.hpp's
// reader (why it is hand-written: see tar_writer.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "llm2hef/core/har/tar_stream.hpp"

namespace llm2hef::core::har {

// Writes a POSIX (ustar, pax where a name needs it) tar. Besides members of
// known size it can write a member whose size is only known at its end
// (begin_open): the header is written with a placeholder and patched in
// place, so a rewritten member streams straight into the output instead of
// through a temporary file. Sizes of 8 GiB and more use the base-256 size
// field that GNU tar, libarchive and Python's tarfile read.
class TarWriter {
 public:
  explicit TarWriter(const std::filesystem::path& path);
  ~TarWriter();
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;

  void begin(const TarMember& m);       // then exactly m.size bytes through write()
  void begin_open(const TarMember& m);  // any number of bytes; end() records the size
  void write(const void* data, size_t n);
  void end();
  void close();

 private:
  void put(const void* data, size_t n);
  void put_header(const TarMember& m, uint64_t size, char type);
  int fd_ = -1;
  std::filesystem::path path_;
  std::string current_;
  TarMember open_member_;
  bool open_ = false;
  uint64_t pos_ = 0, header_pos_ = 0, data_start_ = 0, expected_ = 0, written_ = 0;
};

// Streams the rest of the reader's current member into the writer
// (the writer's member must already be begun with the same size).
void copy_member_data(TarReader& in, TarWriter& out, uint64_t size, const std::function<void(uint64_t)>& on_bytes);

}  // namespace llm2hef::core::har
