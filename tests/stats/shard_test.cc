#include "src/stats/shard.h"

#include <gtest/gtest.h>

#include <thread>

namespace sluice::stats {
namespace {

// Runs `fn` on a fresh thread and waits for it, so claims made inside are released on exit.
template <typename Fn>
void on_thread(Fn fn) {
  std::thread t(fn);
  t.join();
}

TEST(ShardTest, ThreadsStartOnSharedShardZero) {
  on_thread([] { EXPECT_EQ(thread_shard(), 0u); });
}

TEST(ShardTest, WorkerTakesTheShardItAsksFor) {
  on_thread([] {
    set_thread_shard(5);
    EXPECT_EQ(thread_shard(), 5u);
  });
}

TEST(ShardTest, OutOfRangeShardFallsBackToShared) {
  on_thread([] {
    set_thread_shard(kMaxShards);
    EXPECT_EQ(thread_shard(), 0u);
  });
}

TEST(ShardTest, SecondThreadAskingForAnOwnedShardGetsSharedShard) {
  on_thread([] {
    set_thread_shard(7);
    ASSERT_EQ(thread_shard(), 7u);
    on_thread([] {
      set_thread_shard(7);
      EXPECT_EQ(thread_shard(), 0u);
    });
  });
}

TEST(ShardTest, ShardIsReleasedWhenItsThreadExits) {
  on_thread([] { set_thread_shard(9); });
  on_thread([] {
    set_thread_shard(9);
    EXPECT_EQ(thread_shard(), 9u);
  });
}

TEST(ShardTest, ChangingShardReleasesThePreviousOne) {
  on_thread([] {
    set_thread_shard(11);
    set_thread_shard(12);
    EXPECT_EQ(thread_shard(), 12u);
    on_thread([] {
      set_thread_shard(11);
      EXPECT_EQ(thread_shard(), 11u);
    });
  });
}

}  // namespace
}  // namespace sluice::stats
