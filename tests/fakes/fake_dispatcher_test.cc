#include "tests/fakes/fake_dispatcher.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace sluice {
namespace {

using namespace std::chrono_literals;

TEST(FakeDispatcherTest, RunsTimersInDueOrderAndMovesTheClockToEachDueTime) {
  FakeClock clock;
  FakeDispatcher d(clock);
  const TimePoint start = clock.now();
  std::vector<std::pair<std::string, Duration>> fired;
  auto a = d.create_timer([&] { fired.emplace_back("a", clock.now() - start); });
  auto b = d.create_timer([&] { fired.emplace_back("b", clock.now() - start); });
  a->arm(30ms);
  b->arm(10ms);
  d.advance(50ms);
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0], std::make_pair(std::string("b"), Duration(10ms)));
  EXPECT_EQ(fired[1], std::make_pair(std::string("a"), Duration(30ms)));
  EXPECT_EQ(clock.now() - start, 50ms);
}

TEST(FakeDispatcherTest, TimerDueLaterThanTheAdvanceDoesNotFire) {
  FakeClock clock;
  FakeDispatcher d(clock);
  int fired = 0;
  auto t = d.create_timer([&] { ++fired; });
  t->arm(10ms);
  d.advance(9ms);
  EXPECT_EQ(fired, 0);
  EXPECT_TRUE(t->armed());
  d.advance(1ms);
  EXPECT_EQ(fired, 1);
  EXPECT_FALSE(t->armed());
}

TEST(FakeDispatcherTest, CancelledOrDestroyedTimerNeverFires) {
  FakeClock clock;
  FakeDispatcher d(clock);
  int fired = 0;
  auto cancelled = d.create_timer([&] { ++fired; });
  auto destroyed = d.create_timer([&] { ++fired; });
  cancelled->arm(1ms);
  destroyed->arm(1ms);
  cancelled->cancel();
  destroyed.reset();
  d.advance(5ms);
  EXPECT_EQ(fired, 0);
  EXPECT_EQ(d.armed_timers(), 0u);
}

TEST(FakeDispatcherTest, RearmingReplacesTheSchedule) {
  FakeClock clock;
  FakeDispatcher d(clock);
  const TimePoint start = clock.now();
  std::vector<Duration> at;
  auto t = d.create_timer([&] { at.push_back(clock.now() - start); });
  t->arm(5ms);
  t->arm(8ms);
  d.advance(20ms);
  EXPECT_EQ(at, std::vector<Duration>{Duration(8ms)});
}

TEST(FakeDispatcherTest, TimerMayDestroyItselfInsideItsCallback) {
  FakeClock clock;
  FakeDispatcher d(clock);
  std::unique_ptr<Timer> t;
  int fired = 0;
  t = d.create_timer([&] {
    ++fired;
    t.reset();
  });
  t->arm(1ms);
  d.advance(2ms);
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(t, nullptr);
}

TEST(FakeDispatcherTest, PostedTasksWaitUntilRunAndRunInOrder) {
  FakeClock clock;
  FakeDispatcher d(clock);
  std::string order;
  d.post([&] {
    order += "a";
    d.post([&] { order += "c"; });
  });
  d.post([&] { order += "b"; });
  EXPECT_EQ(order, "");
  EXPECT_EQ(d.posted(), 2u);
  EXPECT_EQ(d.run_pending(), 3u);
  EXPECT_EQ(order, "abc");
}

TEST(FakeDispatcherTest, TasksPostedByATimerRunBeforeTheNextTimer) {
  FakeClock clock;
  FakeDispatcher d(clock);
  std::string order;
  auto first = d.create_timer([&] {
    order += "1";
    d.post([&] { order += "p"; });
  });
  auto second = d.create_timer([&] { order += "2"; });
  first->arm(1ms);
  second->arm(1ms);
  d.advance(1ms);
  EXPECT_EQ(order, "1p2");
}

TEST(FakeDispatcherTest, TwoDispatchersOnOneClockShareOneTimeline) {
  FakeClock clock;
  FakeDispatcher w0(clock, 0);
  FakeDispatcher w1(clock, 1);
  std::string order;
  auto a = w0.create_timer([&] {
    order += "a";
    w1.post([&] { order += "x"; });  // a cross-worker post runs at the time it was posted
  });
  auto b = w1.create_timer([&] { order += "b"; });
  a->arm(1ms);
  b->arm(2ms);
  w0.advance(3ms);
  EXPECT_EQ(order, "axb");
  EXPECT_EQ(w0.now(), w1.now());
  EXPECT_EQ(w1.worker_index(), 1u);
}

TEST(FakeDispatcherTest, PostIsSafeFromOtherThreads) {
  FakeClock clock;
  FakeDispatcher d(clock);
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) d.post([&] { ran.fetch_add(1); });
    });
  }
  for (auto& t : threads) t.join();
  d.run_pending();
  EXPECT_EQ(ran.load(), 4000);
}

}  // namespace
}  // namespace sluice
