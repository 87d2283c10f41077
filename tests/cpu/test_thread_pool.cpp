// ThreadPool: every index exactly once, chunking rules, exceptions, nesting, back-to-back calls.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>
#include <vkgrad/error.hpp>

#include "cpu/thread_pool.hpp"

using namespace vkgrad;
using namespace vkgrad::cpu;

namespace {

// Runs one parallel_for and checks: each index once, chunks contiguous and in range, at most
// size() of them, each at least `grain` long when there is more than one.
void check_cover(ThreadPool& pool, int64_t n, int64_t grain) {
  SCOPED_TRACE(::testing::Message()
               << "threads=" << pool.size() << " n=" << n << " grain=" << grain);
  std::vector<std::atomic<uint8_t>> hits(static_cast<size_t>(n));
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  pool.parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(mu);
    chunks.emplace_back(begin, end);
  });
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i;
  if (n == 0) {
    EXPECT_TRUE(chunks.empty());
    return;
  }
  std::sort(chunks.begin(), chunks.end());
  EXPECT_LE(static_cast<int64_t>(chunks.size()), pool.size());
  EXPECT_EQ(chunks.front().first, 0);
  EXPECT_EQ(chunks.back().second, n);
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(chunks[i].first, chunks[i - 1].second);
    }
    if (chunks.size() > 1) {
      EXPECT_GE(chunks[i].second - chunks[i].first, grain);
    }
  }
  if (n <= grain) {
    EXPECT_EQ(chunks.size(), 1u);
  }
}

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 3, 17, 1000, 1 << 20}) {
      for (int64_t grain : {0, 1, 2, 7, 1000, 1 << 20}) check_cover(pool, n, grain);
    }
  }
}

TEST(ThreadPool, UsesEveryThreadWhenThereIsEnoughWork) {
  ThreadPool pool(4);
  std::atomic<int> calls{0};
  pool.parallel_for(4000, 1, [&](int64_t b, int64_t e) {
    EXPECT_EQ(e - b, 1000);
    ++calls;
  });
  EXPECT_EQ(calls.load(), 4);
}

TEST(ThreadPool, SmallOrSingleThreadedWorkRunsInlineInTheCaller) {
  const auto me = std::this_thread::get_id();
  ThreadPool one(1);
  int calls = 0;
  one.parallel_for(1 << 16, 1, [&](int64_t b, int64_t e) {
    EXPECT_EQ(std::this_thread::get_id(), me);
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 1 << 16);
    ++calls;
  });
  ThreadPool four(4);
  four.parallel_for(100, 100, [&](int64_t b, int64_t e) {
    EXPECT_EQ(std::this_thread::get_id(), me);
    EXPECT_EQ(e - b, 100);
    ++calls;
  });
  EXPECT_EQ(calls, 2);
}

TEST(ThreadPool, ExceptionsReachTheCallerAfterEveryChunkRan) {
  ThreadPool pool(4);
  for (int64_t bad : {int64_t{0}, int64_t{999}, int64_t{-1}}) {  // -1: every chunk throws
    std::atomic<int64_t> done{0};
    try {
      pool.parallel_for(1000, 1, [&](int64_t b, int64_t e) {
        done += e - b;
        if (bad < 0 || (b <= bad && bad < e)) throw std::runtime_error("chunk failed");
      });
      ADD_FAILURE() << "expected an exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "chunk failed");
    }
    EXPECT_EQ(done.load(), 1000);
  }
  // Still usable.
  check_cover(pool, 1000, 1);
}

TEST(ThreadPool, NestedCallsRunInlineAndCoverTheGrid) {
  ThreadPool pool(4);
  constexpr int64_t kRows = 37, kCols = 53;
  std::vector<std::atomic<int>> hits(kRows * kCols);
  pool.parallel_for(kRows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const auto me = std::this_thread::get_id();
      pool.parallel_for(kCols, 1, [&](int64_t c0, int64_t c1) {
        EXPECT_EQ(std::this_thread::get_id(), me);
        for (int64_t c = c0; c < c1; ++c) ++hits[static_cast<size_t>(r * kCols + c)];
      });
    }
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPool, CallsFromSeveralThreadsAreSerialized) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 300; ++i) {
        pool.parallel_for(90, 1, [&](int64_t b, int64_t e) { total += e - b; });
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(total.load(), 3 * 300 * 90);
}

// Not a timed assertion: prints the cost of one call so a regression is visible in the log.
TEST(ThreadPool, BackToBackCalls) {
  for (int threads : {2, std::max(2, static_cast<int>(std::thread::hardware_concurrency()))}) {
    ThreadPool pool(threads);
    constexpr int kCalls = 10000;
    std::atomic<int64_t> sum{0};
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) {
      pool.parallel_for(threads, 1, [&](int64_t b, int64_t e) {
        sum.fetch_add(e - b, std::memory_order_relaxed);
      });
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(sum.load(), int64_t{kCalls} * threads);
    std::printf("parallel_for, %d threads: %.2f us per call (%d back-to-back calls)\n", threads,
                us / kCalls, kCalls);

    // After an idle gap the workers sleep, so a call pays for waking them.
    constexpr int kIdleCalls = 50;
    double idle_us = 0;
    for (int i = 0; i < kIdleCalls; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const auto t1 = std::chrono::steady_clock::now();
      pool.parallel_for(threads, 1, [&](int64_t b, int64_t e) {
        sum.fetch_add(e - b, std::memory_order_relaxed);
      });
      idle_us +=
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t1).count();
    }
    std::printf("parallel_for, %d threads: %.2f us per call after 1 ms idle\n", threads,
                idle_us / kIdleCalls);
  }
}

TEST(ThreadPool, SizeMustBePositive) {
  EXPECT_THROW(ThreadPool(0), Error);
  EXPECT_THROW(ThreadPool(-3), Error);
}

TEST(ThreadPool, DefaultSizeFollowsCpuThreads) {
  const char* old = std::getenv("CPU_THREADS");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("CPU_THREADS", "3", 1);
  EXPECT_EQ(ThreadPool::default_size(), 3);
  ::setenv("CPU_THREADS", "1", 1);
  EXPECT_EQ(ThreadPool::default_size(), 1);
  for (const char* bad : {"0", "-2", "two", "4x"}) {
    ::setenv("CPU_THREADS", bad, 1);
    EXPECT_THROW(ThreadPool::default_size(), Error) << bad;
  }
  ::unsetenv("CPU_THREADS");
  EXPECT_EQ(ThreadPool::default_size(),
            std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  if (old != nullptr) ::setenv("CPU_THREADS", saved.c_str(), 1);
  EXPECT_GE(ThreadPool::global().size(), 1);
  EXPECT_EQ(&ThreadPool::global(), &ThreadPool::global());
}

}  // namespace
