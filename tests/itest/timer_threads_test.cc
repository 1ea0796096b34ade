#include "integration/upstream/timer_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <vector>

namespace sluice::itest {
namespace {

using namespace std::chrono_literals;

TEST(ItestTimerThreadsTest, RunsCallbacksInDeadlineOrderOnOneThread) {
  TimerThreads timers(1);
  std::mutex mutex;
  std::vector<int> order;
  std::promise<void> done;
  TimePoint now = SteadyClock::now();
  // Scheduled latest-first; far enough apart that scheduling cannot race the deadlines.
  timers.schedule(now + 300ms, [&] {
    std::lock_guard lock(mutex);
    order.push_back(3);
    done.set_value();
  });
  timers.schedule(now + 200ms, [&] {
    std::lock_guard lock(mutex);
    order.push_back(2);
  });
  timers.schedule(now + 100ms, [&] {
    std::lock_guard lock(mutex);
    order.push_back(1);
  });
  done.get_future().wait();
  std::lock_guard lock(mutex);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(ItestTimerThreadsTest, RunsEveryCallbackAcrossThreads) {
  TimerThreads timers(3);
  std::atomic<int> ran{0};
  std::promise<void> all;
  for (int i = 0; i < 30; ++i) {
    timers.schedule(SteadyClock::now(), [&] {
      if (ran.fetch_add(1) + 1 == 30) all.set_value();
    });
  }
  all.get_future().wait();
  EXPECT_EQ(ran.load(), 30);
}

TEST(ItestTimerThreadsTest, StopDropsCallbacksNotYetDue) {
  std::atomic<bool> ran{false};
  {
    TimerThreads timers(2);
    timers.schedule(SteadyClock::now() + 1h, [&] { ran = true; });
    timers.stop();
    timers.stop();  // idempotent, and the destructor stops again
  }
  EXPECT_FALSE(ran.load());
}

}  // namespace
}  // namespace sluice::itest
