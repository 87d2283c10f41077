// ThreadPool: generation-counter dispatch, chunks claimed with an atomic counter.
//
// Why it is safe: a job lives on the caller's stack. Only the `participants` workers named in
// the posted word read it, and the caller does not return until each of them has counted
// itself out of `pending_`; a participant cannot miss its job, because the word cannot change
// again until it has done so. Other workers never touch the job, so they may skip generations.
#include "cpu/thread_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <string>
#include <vkgrad/error.hpp>

namespace vkgrad::cpu {

namespace {

constexpr uint64_t kParticipantBits = 16;
constexpr uint64_t kParticipantMask = (uint64_t{1} << kParticipantBits) - 1;
constexpr int kMaxThreads = static_cast<int>(kParticipantMask) + 1;
// How long a waiting thread spins before it sleeps: long enough to catch the next kernel of a
// realize, short enough that an idle pool stops burning cores at once.
constexpr std::chrono::microseconds kSpin{50};
constexpr uint32_t kPauses = 256;  // spin rounds with a pause instruction before yielding instead

// True on pool workers, and on a caller while it runs its own chunks: parallel_for runs inline.
thread_local bool t_inside_pool = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Waits until `a` no longer holds `old` and returns the new value: spin for kSpin, then sleep.
// After the first few hundred pauses the spin yields the core each round: on a machine with
// more runnable threads than cores, the thread being waited for may need this one's core
// (measured on 2 cores under load: ~25 us per call with the yield, ~300 us without).
template <class T>
T wait_for_change(const std::atomic<T>& a, T old) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (uint32_t i = 1;; ++i) {
    T v = a.load(std::memory_order_acquire);
    if (v != old) return v;
    if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) break;
    if (i < kPauses) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  while (true) {
    a.wait(old, std::memory_order_acquire);
    T v = a.load(std::memory_order_acquire);
    if (v != old) return v;
  }
}

}  // namespace

struct ThreadPool::Job {
  Job(const std::function<void(int64_t, int64_t)>& f, int64_t n, int64_t chunks)
      : fn(&f), base(n / chunks), rem(n % chunks), chunks(chunks) {}

  const std::function<void(int64_t, int64_t)>* fn;
  int64_t base, rem, chunks;  // chunk i: base + (i < rem) items, starting at i * base + min(i, rem)
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // set by the first chunk that throws

  void run_chunks() {
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
      const int64_t begin = i * base + std::min(i, rem);
      const int64_t end = begin + base + (i < rem ? 1 : 0);
      try {
        (*fn)(begin, end);
      } catch (...) {
        if (!failed.exchange(true, std::memory_order_relaxed)) error = std::current_exception();
      }
    }
  }
};

ThreadPool& ThreadPool::global() {
  static ThreadPool pool(default_size());
  return pool;
}

int ThreadPool::default_size() {
  if (const char* s = std::getenv("CPU_THREADS"); s != nullptr && *s != '\0') {
    char* end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (*end != '\0' || v < 1 || v > kMaxThreads) {
      throw Error(fmt::format("CPU_THREADS={}: expected an integer from 1 to {}", s, kMaxThreads));
    }
    return static_cast<int>(v);
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

ThreadPool::ThreadPool(int threads) : size_(threads) {
  if (threads < 1 || threads > kMaxThreads) {
    throw Error(fmt::format("ThreadPool({}): the size must be from 1 to {}", threads, kMaxThreads));
  }
  workers_.reserve(static_cast<size_t>(threads - 1));
  try {
    for (int i = 0; i < threads - 1; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
  } catch (...) {
    stop_workers();  // join those already started; ~ThreadPool does not run for a throwing ctor
    throw;
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  if (workers_.empty()) return;
  stop_.store(true, std::memory_order_relaxed);
  const uint64_t gen = (word_.load(std::memory_order_relaxed) >> kParticipantBits) + 1;
  word_.store(gen << kParticipantBits, std::memory_order_release);
  word_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::worker_loop(int index) {
  t_inside_pool = true;
  uint64_t seen = 0;
  while (true) {
    seen = wait_for_change(word_, seen);
    if (stop_.load(std::memory_order_relaxed)) return;
    if (static_cast<uint64_t>(index) >= (seen & kParticipantMask)) continue;
    job_->run_chunks();
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t chunks = std::min<int64_t>(size_, n / std::max<int64_t>(grain, 1));
  if (chunks <= 1 || t_inside_pool) {
    fn(0, n);
    return;
  }

  std::lock_guard lock(submit_mu_);
  Job job(fn, n, chunks);
  const auto participants = static_cast<int32_t>(chunks - 1);
  job_ = &job;
  pending_.store(participants, std::memory_order_relaxed);
  const uint64_t gen = (word_.load(std::memory_order_relaxed) >> kParticipantBits) + 1;
  word_.store(gen << kParticipantBits | static_cast<uint64_t>(participants),
              std::memory_order_release);
  word_.notify_all();

  t_inside_pool = true;
  job.run_chunks();
  t_inside_pool = false;
  for (int32_t p; (p = pending_.load(std::memory_order_acquire)) != 0;)
    wait_for_change(pending_, p);
  job_ = nullptr;
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace vkgrad::cpu
