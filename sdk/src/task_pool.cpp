#include "task_pool.hpp"

namespace llm2hef::sdk {

TaskPool::TaskPool(unsigned threads) : threads_(threads == 0 ? 1 : threads) {
  for (unsigned t = 1; t < threads_; ++t) workers_.emplace_back([this, t] { worker(t); });
}

TaskPool::~TaskPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void TaskPool::run_one(Batch& b, unsigned thread, std::unique_lock<std::mutex>& lock) {
  const size_t index = b.next++;
  lock.unlock();
  std::exception_ptr error;
  try {
    (*b.fn)(index, thread);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  if (error) b.errors[index] = error;
  if (++b.finished == b.count) done_.notify_all();
}

void TaskPool::worker(unsigned thread) {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || (batch_ && batch_->next < batch_->count); });
    if (stopping_) return;
    run_one(*batch_, thread, lock);
  }
}

void TaskPool::run(size_t count, const std::function<void(size_t, unsigned)>& fn) {
  if (count == 0) return;
  if (threads_ == 1 || count == 1) {  // no hand-off for what one thread does
    for (size_t i = 0; i < count; ++i) fn(i, 0);
    return;
  }
  Batch b;
  b.fn = &fn;
  b.count = count;
  b.errors.resize(count);
  std::unique_lock lock(mutex_);
  batch_ = &b;
  work_.notify_all();
  while (b.next < b.count) run_one(b, 0, lock);
  // Workers still running an index hold no reference to b once they have
  // counted it finished (under the lock), so b may go when all are counted.
  done_.wait(lock, [&] { return b.finished == b.count; });
  batch_ = nullptr;
  lock.unlock();
  for (const std::exception_ptr& e : b.errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace llm2hef::sdk
