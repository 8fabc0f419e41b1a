#include "llm2hef/sdk/background_file_writer.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <new>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

namespace {

// iovecs per pwritev; IOV_MAX is 1024 on Linux.
#ifdef IOV_MAX
constexpr size_t kMaxIov = IOV_MAX < 1024 ? IOV_MAX : 1024;
#else
constexpr size_t kMaxIov = 16;
#endif

}  // namespace

void BackgroundFileWriter::PagesDeleter::operator()(char* p) const {
  if (p) ::munmap(p, bytes);
}

std::unique_ptr<char[], BackgroundFileWriter::PagesDeleter> BackgroundFileWriter::allocate_pages(size_t bytes) {
  const size_t n = std::max<size_t>(bytes, 1);
  void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return std::unique_ptr<char[], PagesDeleter>(static_cast<char*>(p), PagesDeleter{n});
}

BackgroundFileWriter::BackgroundFileWriter(std::filesystem::path path, Writeback writeback)
    : path_(std::move(path)), writeback_(writeback) {}

BackgroundFileWriter::~BackgroundFileWriter() {
  stop_threads();
  if (fd_ >= 0) ::close(fd_);
}

void BackgroundFileWriter::open() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) throw BadInput(path_.string() + ": cannot open for writing: " + std::strerror(errno));
#if defined(__linux__)
  if (writeback_ == Writeback::as_written) {
    // A descriptor of its own, so that close() need not wait for the last
    // writeback request; without one the hint is simply not given.
    flush_fd_ = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
    if (flush_fd_ >= 0) flusher_ = std::thread([this] { flusher_loop(); });
  }
#endif
  writer_ = std::thread([this] { writer_loop(); });
}

void BackgroundFileWriter::append(std::span<const char> bytes) { write_at(size_, bytes); }

void BackgroundFileWriter::write_at(uint64_t offset, std::span<const char> bytes) {
  if (fd_ < 0) open();
  size_ = std::max(size_, offset + bytes.size());
  while (!bytes.empty()) {
    Buffer& b = current_.buffer;
    if (!b.bytes) {
      b.bytes = allocate_pages(kBatchBytes);  // untouched until written: costs no memory before
      b.capacity = kBatchBytes;
    }
    if (b.used == b.capacity) {
      submit_current();
      continue;
    }
    const size_t n = std::min(b.capacity - b.used, bytes.size());
    char* at = b.bytes.get() + b.used;
    std::memcpy(at, bytes.data(), n);
    b.used += n;
    // Consecutive writes that continue each other in the file become one
    // piece (appends always do; a transposed weight's pieces do not).
    Piece* last = current_.pieces.empty() ? nullptr : &current_.pieces.back();
    if (last && last->data + last->length == at && last->offset + last->length == offset)
      last->length += n;
    else
      current_.pieces.push_back({offset, at, n});
    bytes = bytes.subspan(n);
    offset += n;
  }
}

void BackgroundFileWriter::submit_current() {
  Job job;
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return batches_in_flight_ < kBatchesInFlight - 1 || !failure_.empty(); });
    if (!failure_.empty()) throw BadInput(failure_);
    ++batches_in_flight_;
    job = std::move(current_);
    current_ = Job{};
    if (!spare_batches_.empty()) {
      current_.buffer = std::move(spare_batches_.back());
      spare_batches_.pop_back();
      current_.buffer.used = 0;
    }
  }
  enqueue(std::move(job));
}

std::span<char> BackgroundFileWriter::acquire_block(size_t bytes) {
  if (block_acquired_) throw InternalError(path_.string() + ": a block was acquired twice");
  if (fd_ < 0) open();
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return blocks_out_ < kBlocks || !failure_.empty(); });
    if (!failure_.empty()) throw BadInput(failure_);
    ++blocks_out_;
    if (!spare_blocks_.empty()) {
      acquired_ = std::move(spare_blocks_.back());
      spare_blocks_.pop_back();
    }
  }
  if (acquired_.capacity < bytes) {
    acquired_.bytes.reset();  // the old block goes before the new one is faulted in
    acquired_.bytes = allocate_pages(bytes);
    acquired_.capacity = bytes;
  }
  acquired_.used = bytes;
  block_acquired_ = true;
  return {acquired_.bytes.get(), bytes};
}

void BackgroundFileWriter::submit_block(std::vector<Extent> extents) {
  if (!block_acquired_) throw InternalError(path_.string() + ": a block was submitted that was not acquired");
  Job job;
  job.block = true;
  job.buffer = std::move(acquired_);
  acquired_ = Buffer{};
  block_acquired_ = false;
  const char* begin = job.buffer.bytes.get();
  const char* end = begin + job.buffer.used;
  job.pieces.reserve(extents.size());
  for (const Extent& e : extents) {
    if (e.data < begin || e.data + e.length > end)
      throw InternalError(path_.string() + ": an extent lies outside the block handed over");
    if (e.length == 0) continue;
    job.pieces.push_back({e.offset, e.data, e.length});
    size_ = std::max(size_, e.offset + e.length);
  }
  enqueue(std::move(job));
}

void BackgroundFileWriter::submit_borrowed(std::vector<Extent> extents, std::function<void()> written) {
  if (block_acquired_) throw InternalError(path_.string() + ": borrowed bytes submitted while a block is acquired");
  if (fd_ < 0) open();
  Job job;
  job.block = true;
  job.written = std::move(written);
  job.pieces.reserve(extents.size());
  for (const Extent& e : extents) {
    if (e.length == 0) continue;
    job.pieces.push_back({e.offset, e.data, e.length});
    size_ = std::max(size_, e.offset + e.length);
  }
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return blocks_out_ < kBlocks || !failure_.empty(); });
    if (!failure_.empty()) throw BadInput(failure_);  // `written` is not called: nothing was handed over
    ++blocks_out_;
  }
  enqueue(std::move(job));
}

void BackgroundFileWriter::abandon_block() {
  if (!block_acquired_) return;
  block_acquired_ = false;
  std::lock_guard lock(mutex_);
  spare_blocks_.push_back(std::move(acquired_));
  acquired_ = Buffer{};
  --blocks_out_;
  changed_.notify_all();
}

void BackgroundFileWriter::enqueue(Job job) {
  {
    std::lock_guard lock(mutex_);
    queued_.push_back(std::move(job));
  }
  changed_.notify_all();
}

void BackgroundFileWriter::writer_loop() {
  for (;;) {
    std::vector<Job> jobs;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return !queued_.empty() || stopping_; });
      if (queued_.empty()) return;  // stopping, and nothing left to write
      // Everything queued at once: a transposed weight's rows continue each
      // other from one block to the next, and become one pwritev.
      while (!queued_.empty()) {
        jobs.push_back(std::move(queued_.front()));
        queued_.pop_front();
      }
    }
    std::string error;
    try {
      write_jobs(jobs);
    } catch (const std::exception& e) {
      error = e.what();
    }
    for (Job& job : jobs) {
      if (!job.written) continue;
      try {
        job.written();  // borrowed bytes may go (their pages are released)
      } catch (...) {
        // Releasing pages is advisory: a failure costs memory, not the output.
      }
    }
    {
      std::lock_guard lock(mutex_);
      if (!error.empty() && failure_.empty()) failure_ = error;
      for (Job& job : jobs) {
        if (job.block) {
          --blocks_out_;
          if (job.buffer.bytes) spare_blocks_.push_back(std::move(job.buffer));
        } else {
          --batches_in_flight_;
          spare_batches_.push_back(std::move(job.buffer));
        }
      }
    }
    changed_.notify_all();
  }
}

void BackgroundFileWriter::write_jobs(std::vector<Job>& jobs) {
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) return;  // the file is lost already
  }
  std::vector<Piece> all;
  for (const Job& job : jobs) all.insert(all.end(), job.pieces.begin(), job.pieces.end());
  if (all.empty()) return;
  // In file order, so that pieces that continue each other are written by
  // one call. Regions never overlap (write_at's contract); if they did, the
  // order given would matter, so then it is kept.
  std::vector<Piece> sorted = all;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Piece& a, const Piece& b) { return a.offset < b.offset; });
  bool overlap = false;
  for (size_t i = 1; i < sorted.size() && !overlap; ++i)
    overlap = sorted[i].offset < sorted[i - 1].offset + sorted[i - 1].length;
  const std::vector<Piece>& order = overlap ? all : sorted;
  write_pieces(order.data(), order.size());
  if (writeback_ == Writeback::as_written && flush_fd_ >= 0) {
    for (const Piece& p : sorted) note_written(p.offset, p.offset + p.length);
    // Whole pages only: the one the complete part ends in is still being filled.
    const uint64_t end = complete_ / 4096 * 4096;
    if (end >= requested_ + kWritebackBytes) {
      {
        std::lock_guard lock(flush_mutex_);
        pending_begin_ = std::min(pending_begin_, requested_);
        pending_end_ = std::max(pending_end_, end);
        pending_bytes_ += end - requested_;
      }
      requested_ = end;
      flush_changed_.notify_all();
    }
  }
}

void BackgroundFileWriter::note_written(uint64_t begin, uint64_t end) {
  if (end <= complete_) return;
  if (begin <= complete_) {
    complete_ = end;
  } else {
    auto it = written_.lower_bound(begin);
    if (it != written_.begin()) {
      const auto prev = std::prev(it);
      if (prev->second >= begin) {
        begin = prev->first;
        end = std::max(end, prev->second);
        written_.erase(prev);
      }
    }
    while (it != written_.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = written_.erase(it);
    }
    written_.emplace(begin, end);
  }
  while (!written_.empty() && written_.begin()->first <= complete_) {
    complete_ = std::max(complete_, written_.begin()->second);
    written_.erase(written_.begin());
  }
}

// Runs of pieces that continue each other in the file, as pwritev calls of
// at most kMaxWriteBytes and kMaxIov vectors.
void BackgroundFileWriter::write_pieces(const Piece* pieces, size_t count) {
  std::vector<iovec> iov;
  iov.reserve(kMaxIov);
  size_t next = 0;
  const char* p = nullptr;
  size_t left = 0;
  uint64_t at = 0;
  while (left > 0 || next < count) {
    if (left == 0) {
      p = pieces[next].data, left = pieces[next].length, at = pieces[next].offset;
      ++next;
      continue;
    }
    iov.clear();
    const uint64_t start = at;
    size_t total = 0;
    for (;;) {
      const size_t take = std::min(left, kMaxWriteBytes - total);
      iov.push_back({const_cast<char*>(p), take});
      total += take, p += take, left -= take, at += take;
      if (left > 0 || total == kMaxWriteBytes || iov.size() == kMaxIov) break;
      while (next < count && pieces[next].length == 0) ++next;
      if (next == count || pieces[next].offset != at) break;
      p = pieces[next].data, left = pieces[next].length;
      ++next;
    }
    // Partial writes resume where they stopped.
    size_t first = 0;
    uint64_t where = start;
    while (total > 0) {
      const ssize_t n =
          ::pwritev(fd_, iov.data() + first, static_cast<int>(iov.size() - first), static_cast<off_t>(where));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw BadInput(path_.string() + ": write failed (disk full?): " + std::strerror(n < 0 ? errno : ENOSPC));
      size_t done = static_cast<size_t>(n);
      total -= done, where += done;
      while (done > 0) {
        if (done >= iov[first].iov_len) {
          done -= iov[first].iov_len;
          ++first;
        } else {
          iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + done;
          iov[first].iov_len -= done;
          done = 0;
        }
      }
    }
  }
}

void BackgroundFileWriter::flusher_loop() {
  for (;;) {
    uint64_t begin = 0, end = 0;
    bool last = false;
    {
      std::unique_lock lock(flush_mutex_);
      flush_changed_.wait(lock, [&] { return pending_bytes_ >= kWritebackBytes || flush_now_ || flush_stopping_; });
      if (flush_stopping_ && !flush_now_) break;  // abandoned: the file is being removed
      last = flush_now_;
      begin = pending_begin_, end = pending_end_;
      pending_begin_ = UINT64_MAX, pending_end_ = 0, pending_bytes_ = 0;
    }
#if defined(__linux__)
    // A hint that starts the disk writes without waiting for them; it may
    // block while the disk's queue is full (this thread is there to absorb
    // that). A failure resurfaces in the fsync that makes the output durable.
    if (begin < end)
      ::sync_file_range(flush_fd_, static_cast<off_t>(begin), static_cast<off_t>(end - begin), SYNC_FILE_RANGE_WRITE);
#endif
    if (last) break;
  }
  ::close(flush_fd_);
}

void BackgroundFileWriter::stop_threads() {
  if (writer_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    writer_.join();
  }
  if (flusher_.joinable()) {
    {
      std::lock_guard lock(flush_mutex_);
      flush_stopping_ = true;  // after close() flush_now_ is set: the last range is still requested
    }
    flush_changed_.notify_all();
    flusher_.join();
  }
}

void BackgroundFileWriter::throw_if_failed() {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) throw BadInput(failure_);
}

void BackgroundFileWriter::close() {
  if (fd_ < 0) return;
  abandon_block();
  if (!current_.pieces.empty()) submit_current();
  if (writer_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    writer_.join();  // the writer drains the queue before it returns
  }
  {
    // The flusher requests the writeback of what is left and exits; it is
    // joined by the destructor, so close() does not wait for the disk.
    std::lock_guard lock(flush_mutex_);
    if (size_ > requested_) {
      pending_begin_ = std::min(pending_begin_, requested_);
      pending_end_ = std::max(pending_end_, size_);
    }
    flush_now_ = true;
  }
  flush_changed_.notify_all();
  const int fd = fd_;
  fd_ = -1;
  const bool closed = ::close(fd) == 0;
  const int close_errno = errno;
  throw_if_failed();
  if (!closed) throw BadInput(path_.string() + ": write failed while closing: " + std::strerror(close_errno));
}

}  // namespace llm2hef::sdk
