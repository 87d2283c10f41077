// cpu: ThreadPool, the workers that run a kernel's outermost parallel axis on every core.
// Exports ThreadPool (parallel_for over [0, n) in contiguous chunks, the caller taking one).
// Depends on the C++ standard library and <vkgrad/error.hpp> only; never includes vk.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vkgrad::cpu {

// size() - 1 worker threads plus the caller. A call is posted by bumping a generation counter
// that idle workers spin on briefly (~50 µs) and then sleep on (std::atomic::wait), so
// back-to-back calls cost a few microseconds and an idle pool costs no CPU.
//
// Calls from different threads are serialized (one job at a time); a call made from inside a
// chunk of any pool's parallel_for runs inline on that thread, so nesting cannot deadlock.
class ThreadPool {
 public:
  static ThreadPool& global();  // default_size() threads, created on first use
  // CPU_THREADS if set (an integer >= 1, else Error), else hardware_concurrency() (at least 1).
  static int default_size();

  explicit ThreadPool(int threads);  // threads >= 1 (1: everything runs inline in the caller)
  ~ThreadPool();                     // joins; must not race a running parallel_for
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }

  // Splits [0, n) into at most size() contiguous chunks of at least `grain` items each (sizes
  // differ by at most one) and runs fn(begin, end) on them in parallel, the calling thread
  // taking chunks itself; returns when all are done. n <= grain, size() == 1 or a nested call
  // runs fn(0, n) inline with no synchronization; n <= 0 does nothing. If fn throws, every
  // chunk still runs and the first exception is rethrown here.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct Job;
  void worker_loop(int index);
  void stop_workers();

  int size_;
  std::vector<std::thread> workers_;
  std::mutex submit_mu_;  // one job at a time
  // (generation << 16) | participants: the workers with index < participants take part in the
  // current job. Written by the submitting caller (and the destructor) only.
  std::atomic<uint64_t> word_{0};
  std::atomic<int32_t> pending_{0};  // participants that have not yet finished the current job
  std::atomic<bool> stop_{false};
  Job* job_ = nullptr;  // the current job; read by participants only, so it outlives them
};

}  // namespace vkgrad::cpu
