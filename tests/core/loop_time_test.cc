#include <gtest/gtest.h>

#include <thread>

#include "src/core/time.h"

namespace sluice {
namespace {

// No timing thresholds: only orderings and equality of cached readings.

TEST(LoopTime, OutsideAScopeReadsTheClock) {
  const TimePoint before = SteadyClock::now();
  const TimePoint t = LoopTime::now();
  EXPECT_GE(t, before);
  EXPECT_GE(SteadyClock::now(), t);
}

TEST(LoopTime, InsideAScopeEveryReadIsTheReadingTakenWhenItOpened) {
  const TimePoint before = SteadyClock::now();
  TimePoint first;
  {
    const LoopTime::Scope scope;
    first = LoopTime::now();
    EXPECT_GE(first, before);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(LoopTime::now(), first);
    EXPECT_EQ(RealClock::instance().now(), first);  // filters see the same reading
    EXPECT_LT(first, SteadyClock::now());
  }
  // Closed: reads the clock again.
  EXPECT_GT(LoopTime::now(), first);
}

TEST(LoopTime, ANestedScopeKeepsTheOuterReadingAndDoesNotEndIt) {
  TimePoint outer;
  {
    const LoopTime::Scope scope;
    outer = LoopTime::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    {
      const LoopTime::Scope inner;
      EXPECT_EQ(LoopTime::now(), outer);
    }
    EXPECT_EQ(LoopTime::now(), outer);  // the inner scope did not clear the cache
  }
  EXPECT_GT(LoopTime::now(), outer);
}

TEST(LoopTime, TheCacheIsPerThread) {
  const LoopTime::Scope scope;
  const TimePoint here = LoopTime::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  TimePoint there;
  std::thread([&] { there = LoopTime::now(); }).join();
  EXPECT_GT(there, here);
  EXPECT_EQ(LoopTime::now(), here);
}

}  // namespace
}  // namespace sluice
