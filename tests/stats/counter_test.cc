#include "src/stats/counter.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace sluice {
namespace {

TEST(CounterTest, StartsAtZeroAndAddsIncrements) {
  Counter c;
  EXPECT_EQ(c.value(), 0u);
  c.inc();
  c.inc(41);
  EXPECT_EQ(c.value(), 42u);
}

TEST(CounterTest, WorkerShardsMergeToExactTotal) {
  Counter c;
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 100000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&c, i] {
      stats::set_thread_shard(static_cast<std::size_t>(1 + i));
      ASSERT_EQ(stats::thread_shard(), static_cast<std::size_t>(1 + i));
      for (uint64_t n = 0; n < kPerThread; ++n) c.inc();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), kThreads * kPerThread);
}

TEST(CounterTest, SharedShardIsExactUnderConcurrentNonWorkerThreads) {
  Counter c;
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 100000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&c] {
      ASSERT_EQ(stats::thread_shard(), 0u);
      for (uint64_t n = 0; n < kPerThread; ++n) c.inc(2);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 2 * kThreads * kPerThread);
}

}  // namespace
}  // namespace sluice
