// A file written in the background: model.onnx.data as the graph builder
// writes it (appended in order, except that a transposed weight's tiles land
// at their place in its reserved region, so each source tensor is read only
// once) and resources/embeddings.npy.
//
// Writing overlaps with reading and converting: write_at copies the bytes
// into a batch and returns; a writer thread pwrites full batches while the
// caller goes on. At most kBatchesInFlight batches of kBatchBytes exist, so
// memory stays bounded (the caller waits when the writer falls behind).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "llm2hef/sdk/errors.hpp"  // LLM2HEF_SDK_API

namespace llm2hef::sdk {

// When the kernel is asked to start writing the bytes to the disk.
enum class Writeback {
  deferred,    // whenever it likes (an fsync at the end, if any, does it all)
  as_written,  // as each batch is written, so that the disk works while the
               // export computes and the final fsync has little left to wait for
};

class LLM2HEF_SDK_API BackgroundFileWriter {
 public:
  static constexpr size_t kBatchBytes = 4u << 20;
  static constexpr size_t kBatchesInFlight = 3;  // filling + queued + being written
  // Largest single pwrite, near cat's 128 KB. On this project's machine
  // (Linux 6.x, ext4, page cache full of other files) dd wrote 2 GB in
  // 0.7 s with blocks of 64-512 KB and in 4-12 s with blocks of 1 MB or
  // more; with free memory every size took 0.6-1.2 s.
  static constexpr size_t kMaxWriteBytes = 256u << 10;

  explicit BackgroundFileWriter(std::filesystem::path path, Writeback writeback = Writeback::deferred)
      : path_(std::move(path)), writeback_(writeback) {}
  // Stops the writer; a file that was not close()d is left incomplete (the
  // export that owns it is being abandoned and its staging folder removed).
  ~BackgroundFileWriter();
  BackgroundFileWriter(const BackgroundFileWriter&) = delete;
  BackgroundFileWriter& operator=(const BackgroundFileWriter&) = delete;

  // Created (truncated) on the first write.
  void append(std::span<const char> bytes);
  // `bytes` at `offset`, which may lie beyond the current end (the region
  // was reserved); the end moves to cover it.
  void write_at(uint64_t offset, std::span<const char> bytes);
  uint64_t size() const { return size_; }
  bool is_open() const { return fd_ >= 0; }
  // Waits for every write, then closes the file; BadInput when a write
  // failed (the first failure's reason).
  void close();
  const std::filesystem::path& path() const { return path_; }

 private:
  struct Piece {
    uint64_t offset;  // in the file
    size_t begin, length;  // in the batch's bytes
  };
  struct Batch {
    std::vector<char> bytes;
    std::vector<Piece> pieces;
  };

  void open();
  void submit_current();  // hands the batch being filled to the writer
  void writer_loop();
  void write_batch(const Batch& batch);  // on the writer thread
  void stop_writer();
  void throw_if_failed();  // caller side, under no lock

  std::filesystem::path path_;
  Writeback writeback_;
  int fd_ = -1;
  uint64_t size_ = 0;
  Batch current_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> queued_;      // full, waiting for the writer
  std::vector<Batch> spare_;      // written, their capacity reused
  size_t in_flight_ = 0;          // queued + being written
  bool stopping_ = false;
  std::string failure_;           // first write error, empty when none
  std::thread writer_;
};

}  // namespace llm2hef::sdk
