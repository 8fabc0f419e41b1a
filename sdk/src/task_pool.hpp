// Threads that share the conversion of one block of weights (issue 31): the
// caller and threads() - 1 workers each take indices of run()'s range until
// none is left. The work given to each index, and where its result lands,
// is fixed by the caller, not by which thread runs it, so the output does
// not depend on the number of threads or on their timing.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace llm2hef::sdk {

class TaskPool {
 public:
  // `threads` >= 1, counting the caller: 1 starts no thread at all.
  explicit TaskPool(unsigned threads);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  unsigned threads() const { return threads_; }
  // Calls fn(index, thread) for every index < count, thread < threads()
  // naming the thread that runs it (for per-thread scratch). Returns once
  // all are done; rethrows the exception of the lowest index that threw, so
  // that which error is reported does not depend on timing either.
  void run(size_t count, const std::function<void(size_t index, unsigned thread)>& fn);

 private:
  struct Batch {
    const std::function<void(size_t, unsigned)>* fn = nullptr;
    size_t count = 0, next = 0, finished = 0;
    std::vector<std::exception_ptr> errors;
  };
  void worker(unsigned thread);
  // Runs one index of the batch; called and returns with the lock held.
  void run_one(Batch& b, unsigned thread, std::unique_lock<std::mutex>& lock);

  unsigned threads_;
  std::mutex mutex_;
  std::condition_variable work_, done_;
  Batch* batch_ = nullptr;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace llm2hef::sdk
