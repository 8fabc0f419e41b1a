#include "llm2hef/sdk/background_file_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <cstring>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

BackgroundFileWriter::~BackgroundFileWriter() {
  stop_writer();
  if (fd_ >= 0) ::close(fd_);
}

void BackgroundFileWriter::open() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) throw BadInput(path_.string() + ": cannot open for writing: " + std::strerror(errno));
  current_.bytes.reserve(kBatchBytes);
  writer_ = std::thread([this] { writer_loop(); });
}

void BackgroundFileWriter::append(std::span<const char> bytes) { write_at(size_, bytes); }

void BackgroundFileWriter::write_at(uint64_t offset, std::span<const char> bytes) {
  if (fd_ < 0) open();
  size_ = std::max(size_, offset + bytes.size());
  while (!bytes.empty()) {
    if (current_.bytes.size() == kBatchBytes) submit_current();
    const size_t room = kBatchBytes - current_.bytes.size();
    const size_t n = std::min(room, bytes.size());
    const size_t begin = current_.bytes.size();
    current_.bytes.insert(current_.bytes.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    // Consecutive writes that continue each other in the file become one
    // pwrite (appends always do; a transposed weight's pieces do not).
    Piece* last = current_.pieces.empty() ? nullptr : &current_.pieces.back();
    if (last && last->begin + last->length == begin && last->offset + last->length == offset)
      last->length += n;
    else
      current_.pieces.push_back({offset, begin, n});
    bytes = bytes.subspan(n);
    offset += n;
  }
}

void BackgroundFileWriter::submit_current() {
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return in_flight_ < kBatchesInFlight - 1 || !failure_.empty(); });
    if (failure_.empty()) {
      queued_.push_back(std::move(current_));
      ++in_flight_;
      current_ = Batch{};
      if (!spare_.empty()) {
        current_ = std::move(spare_.back());
        spare_.pop_back();
      }
    }
  }
  changed_.notify_all();
  throw_if_failed();
  current_.bytes.clear();
  current_.pieces.clear();
  current_.bytes.reserve(kBatchBytes);
}

void BackgroundFileWriter::writer_loop() {
  for (;;) {
    Batch batch;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return !queued_.empty() || stopping_; });
      if (queued_.empty()) return;  // stopping, and nothing left to write
      batch = std::move(queued_.front());
      queued_.pop_front();
    }
    std::string error;
    try {
      write_batch(batch);
    } catch (const std::exception& e) {
      error = e.what();
    }
    {
      std::lock_guard lock(mutex_);
      if (!error.empty() && failure_.empty()) failure_ = error;
      --in_flight_;
      spare_.push_back(std::move(batch));
    }
    changed_.notify_all();
  }
}

void BackgroundFileWriter::write_batch(const Batch& batch) {
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) return;  // the file is lost already
  }
  for (const Piece& piece : batch.pieces) {
    const char* p = batch.bytes.data() + piece.begin;
    size_t left = piece.length;
    uint64_t at = piece.offset;
    while (left > 0) {
      const ssize_t n = ::pwrite(fd_, p, std::min(left, kMaxWriteBytes), static_cast<off_t>(at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw BadInput(path_.string() + ": write failed (disk full?): " + std::strerror(n < 0 ? errno : ENOSPC));
      p += n;
      left -= static_cast<size_t>(n);
      at += static_cast<uint64_t>(n);
    }
  }
#if defined(__linux__)
  if (writeback_ == Writeback::as_written && !batch.pieces.empty()) {
    uint64_t first = UINT64_MAX, end = 0;
    for (const Piece& piece : batch.pieces) {
      first = std::min(first, piece.offset);
      end = std::max(end, piece.offset + piece.length);
    }
    // A hint that starts the disk writes without waiting for them; a failure
    // here resurfaces in the fsync that makes the output durable.
    ::sync_file_range(fd_, static_cast<off_t>(first), static_cast<off_t>(end - first), SYNC_FILE_RANGE_WRITE);
  }
#endif
}

void BackgroundFileWriter::stop_writer() {
  if (!writer_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  writer_.join();
}

void BackgroundFileWriter::throw_if_failed() {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) throw BadInput(failure_);
}

void BackgroundFileWriter::close() {
  if (fd_ < 0) return;
  if (!current_.pieces.empty()) submit_current();
  stop_writer();  // the writer drains the queue before it returns
  const int fd = fd_;
  fd_ = -1;
  const bool closed = ::close(fd) == 0;
  const int close_errno = errno;
  throw_if_failed();
  if (!closed) throw BadInput(path_.string() + ": write failed while closing: " + std::strerror(close_errno));
}

}  // namespace llm2hef::sdk
