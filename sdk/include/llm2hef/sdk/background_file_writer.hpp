// A file written in the background: model.onnx.data as the graph builder
// writes it (appended in order, except that a transposed weight's tiles land
// at their place in its reserved region, so each source tensor is read only
// once) and resources/embeddings.npy.
//
// Writing overlaps with reading and converting. Two ways in:
//  - write_at/append copy small pieces (padding, computed constants) into a
//    batch and return; full batches go to the writer thread.
//  - acquire_block/submit_block hand a whole converted block to the writer:
//    the caller fills a block the writer owns and the writer pwrites from it,
//    so converted weights are not copied again in user space.
//  - submit_borrowed hands over bytes the caller keeps (float32 weights in
//    the checkpoint's mapping, written as stored): not copied at all.
// At most kBatchesInFlight batches of kBatchBytes and kBlocks blocks exist,
// so memory stays bounded whatever the model (the caller waits when the
// writer falls behind).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
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
  as_written,  // soon after they are written, from a thread of its own, so
               // that the disk works while the export computes and the final
               // fsync has little left to wait for
};

class LLM2HEF_SDK_API BackgroundFileWriter {
 public:
  static constexpr size_t kBatchBytes = 1u << 20;  // small constants only: weights go as blocks
  static constexpr size_t kBatchesInFlight = 3;    // filling + queued + being written
  // Blocks handed over whole (acquire_block): one being filled, one queued,
  // one being written.
  static constexpr size_t kBlocks = 3;
  // Largest single pwrite(v), near cat's 128 KB. On this project's machine
  // (Linux 6.x, ext4, page cache full of other files) dd wrote 2 GB in
  // 0.7 s with blocks of 64-512 KB and in 4-12 s with blocks of 1 MB or
  // more; with free memory every size took 0.6-1.2 s.
  static constexpr size_t kMaxWriteBytes = 256u << 10;
  // as_written: bytes written between two writeback requests. Each request
  // may block while the disk's queue is full, which is why it is made from a
  // thread of its own (issue 31: made from the writer thread after each 4 MB
  // batch, the requests blocked it for 4.7 s of a 2.3 GB export).
  static constexpr uint64_t kWritebackBytes = 32u << 20;

  // A span of the file: `length` bytes at `offset`, taken from `data`.
  struct Extent {
    uint64_t offset;
    const char* data;
    size_t length;
  };

  explicit BackgroundFileWriter(std::filesystem::path path, Writeback writeback = Writeback::deferred);
  // Stops the writer; a file that was not close()d is left incomplete (the
  // export that owns it is being abandoned and its staging folder removed).
  ~BackgroundFileWriter();
  BackgroundFileWriter(const BackgroundFileWriter&) = delete;
  BackgroundFileWriter& operator=(const BackgroundFileWriter&) = delete;

  // Created (truncated) on the first write.
  void append(std::span<const char> bytes);
  // `bytes` at `offset`, which may lie beyond the current end (the region
  // was reserved); the end moves to cover it. Regions written must not
  // overlap.
  void write_at(uint64_t offset, std::span<const char> bytes);

  // A block of at least `bytes` bytes (kept from one use to the next) for
  // the caller to fill; waits while all kBlocks are queued or being written.
  // One block at a time: submit_block (or abandon_block) before the next.
  std::span<char> acquire_block(size_t bytes);
  // Hands the acquired block to the writer: each extent's data lies in the
  // block. Copied pieces given before are written first.
  void submit_block(std::vector<Extent> extents);
  // Returns the acquired block unwritten (its filling failed).
  void abandon_block();
  // Writes extents whose data the caller keeps valid until `written` has
  // been called (on the writer thread, once they are written or the file is
  // lost); counts as one of the kBlocks blocks, so the caller waits while
  // all are out. Not while a block is acquired.
  void submit_borrowed(std::vector<Extent> extents, std::function<void()> written);

  uint64_t size() const { return size_; }
  bool is_open() const { return fd_ >= 0; }
  // Waits for every write, then closes the file; BadInput when a write
  // failed (the first failure's reason). With as_written, the writeback of
  // the last bytes is requested but not waited for (the fsync that makes
  // the output durable waits).
  void close();
  const std::filesystem::path& path() const { return path_; }

 private:
  struct Piece {
    uint64_t offset;  // in the file
    const char* data;
    size_t length;
  };
  // Pages of their own (mmap), returned to the system when freed: blocks of
  // several MB from the heap were kept by malloc once freed, and peak RSS
  // grew with the number of distinct block sizes (issue 31).
  struct PagesDeleter {
    PagesDeleter() : bytes(0) {}
    explicit PagesDeleter(size_t n) : bytes(n) {}
    size_t bytes;
    void operator()(char* p) const;
  };
  struct Buffer {
    std::unique_ptr<char[], PagesDeleter> bytes;
    size_t capacity = 0, used = 0;
  };
  static std::unique_ptr<char[], PagesDeleter> allocate_pages(size_t bytes);
  // One entry of the writer's queue: a batch of copied pieces or a block.
  struct Job {
    Buffer buffer;
    std::vector<Piece> pieces;
    bool block = false;             // counts among the kBlocks
    std::function<void()> written;  // borrowed bytes: told when they are written
  };

  void open();
  void submit_current();  // hands the batch being filled to the writer
  void enqueue(Job job);  // under no lock; waits for nothing
  void writer_loop();
  void write_jobs(std::vector<Job>& jobs);  // on the writer thread
  void write_pieces(const Piece* pieces, size_t count);
  void flusher_loop();
  void note_written(uint64_t begin, uint64_t end);  // writer thread: advances complete_
  void stop_threads();
  void throw_if_failed();  // caller side, under no lock

  std::filesystem::path path_;
  Writeback writeback_;
  int fd_ = -1;
  uint64_t size_ = 0;
  Job current_;      // copied pieces being gathered
  Buffer acquired_;  // the block the caller fills, if any
  bool block_acquired_ = false;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queued_;                            // waiting for the writer
  std::vector<Buffer> spare_batches_, spare_blocks_;  // written, their memory reused
  size_t batches_in_flight_ = 0;                      // queued + being written
  size_t blocks_out_ = 0;                             // acquired + queued + being written
  bool stopping_ = false;
  std::string failure_;  // first write error, empty when none
  std::thread writer_;

  // as_written, writer thread only: every byte below complete_ is written;
  // written_ holds the written ranges beyond it (begin -> end, disjoint).
  // Writeback is requested only below complete_: a page still to be
  // completed (a transposed weight fills its region in bands, a few KB per
  // row at a time) would otherwise go to the disk, be dirtied again by the
  // next band and go a second time.
  std::map<uint64_t, uint64_t> written_;
  uint64_t complete_ = 0, requested_ = 0;
  // [pending_begin_, pending_end_) complete and not yet handed to the
  // kernel's writeback.
  std::mutex flush_mutex_;
  std::condition_variable flush_changed_;
  uint64_t pending_begin_ = UINT64_MAX, pending_end_ = 0, pending_bytes_ = 0;
  bool flush_now_ = false, flush_stopping_ = false;
  int flush_fd_ = -1;  // its own descriptor: it may outlive close()
  std::thread flusher_;
};

}  // namespace llm2hef::sdk
