#include "filters/aimd/aimd_limit.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

using namespace std::chrono_literals;

class AimdLimitTest : public ::testing::Test {
 protected:
  // One second of traffic: a sample of `rtt` every 10 ms, demand pressure if asked. The
  // evaluation at the end of a second happens on the first event of the next one.
  void second(Duration rtt, bool pressure) {
    for (int i = 0; i < 100; ++i) {
      now_ += 10ms;
      if (pressure) limit_->on_demand_pressure(now_);
      limit_->on_sample(now_, rtt, limit_->limit());
    }
  }
  // Builds the limiter from default options changed by `edit`.
  template <typename Edit>
  void make(Edit edit) {
    AimdLimit::Options o;
    edit(o);
    limit_ = std::make_unique<AimdLimit>(o);
  }

  TimePoint now_ = TimePoint{} + std::chrono::hours(1);
  std::unique_ptr<AimdLimit> limit_ = std::make_unique<AimdLimit>(AimdLimit::Options{});
};

TEST_F(AimdLimitTest, AddsIncreaseWhenP99IsUnderHeadroomAndThereIsDemand) {
  second(50ms, true);
  second(50ms, true);
  EXPECT_EQ(limit_->limit(), 11u);
  EXPECT_EQ(limit_->last_reason(), "p99 50.0ms < 80.0ms (80% of slo) with demand: +1");
}

TEST_F(AimdLimitTest, HoldsWithoutDemandHoweverFastTheUpstream) {
  for (int i = 0; i < 5; ++i) second(1ms, false);
  EXPECT_EQ(limit_->limit(), 10u);
}

TEST_F(AimdLimitTest, HoldsBetweenHeadroomAndSlo) {
  for (int i = 0; i < 5; ++i) second(90ms, true);
  EXPECT_EQ(limit_->limit(), 10u);
}

TEST_F(AimdLimitTest, BacksOffWhenP99ExceedsTheSlo) {
  second(150ms, false);
  second(50ms, false);
  EXPECT_EQ(limit_->limit(), 7u);
  EXPECT_EQ(limit_->last_reason(), "p99 150.0ms > slo 100.0ms: x0.70");
  EXPECT_DOUBLE_EQ(*limit_->state().p99_ms, 150.0);
}

TEST_F(AimdLimitTest, SamplesThatCausedABackoffDoNotCauseAnother) {
  second(150ms, false);
  // The slow second stays in the 10 s window, but it ran under the old limit.
  for (int i = 0; i < 5; ++i) second(50ms, false);
  EXPECT_EQ(limit_->limit(), 7u);
}

TEST_F(AimdLimitTest, OneRequestSlowerThanTheMultiplierTimesSloDecreasesAtOnce) {
  now_ += 10ms;
  limit_->on_sample(now_, 350ms, 10);
  EXPECT_EQ(limit_->limit(), 7u);
  EXPECT_EQ(limit_->last_reason(), "fast decrease: one request 350.0ms > 3.0x slo 100.0ms");
}

TEST_F(AimdLimitTest, FastDecreaseFiresOncePerFlightOfRequests) {
  now_ += 400ms;
  limit_->on_sample(now_, 350ms, 10);  // admitted 350 ms ago
  now_ += 1ms;
  limit_->on_sample(now_, 340ms, 10);  // admitted before the decrease: same episode
  EXPECT_EQ(limit_->limit(), 7u);
  now_ += 400ms;
  limit_->on_sample(now_, 350ms, 7);  // admitted after the decrease: new evidence
  EXPECT_EQ(limit_->limit(), 4u);     // 7 * 0.7 = 4.9
}

TEST_F(AimdLimitTest, DropsAfterMoreThanTheSloCountAsViolations) {
  for (int i = 0; i < 100; ++i) {
    now_ += 10ms;
    if (i % 20 == 0) {
      limit_->on_drop(now_, 150ms);  // e.g. its deadline passed after 150 ms in flight
    } else {
      limit_->on_sample(now_, 50ms, 10);
    }
  }
  second(50ms, false);
  EXPECT_EQ(limit_->limit(), 7u);
}

TEST_F(AimdLimitTest, DropsWithinTheSloSayNothingAboutIt) {
  for (int i = 0; i < 100; ++i) {
    now_ += 10ms;
    if (i % 20 == 0) {
      limit_->on_drop(now_, 20ms);  // the client gave up early
    } else {
      limit_->on_sample(now_, 50ms, 10);
    }
  }
  second(50ms, false);
  EXPECT_EQ(limit_->limit(), 10u);
}

TEST_F(AimdLimitTest, DropAfterMoreThanTheMultiplierTimesSloDecreasesAtOnce) {
  now_ += 1s;
  limit_->on_drop(now_, 400ms);
  EXPECT_EQ(limit_->limit(), 7u);
}

TEST_F(AimdLimitTest, HoldsWhileThereAreTooFewSamplesForAP99) {
  now_ += 10ms;
  limit_->on_sample(now_, 200ms, 10);
  now_ += 2s;
  limit_->on_sample(now_, 200ms, 10);
  now_ += 2s;
  limit_->on_sample(now_, 200ms, 10);
  EXPECT_EQ(limit_->limit(), 10u);
}

TEST_F(AimdLimitTest, StaysWithinMinAndMax) {
  make([](AimdLimit::Options& o) {
    o.initial_limit = 10;
    o.min_limit = 5;
    o.max_limit = 12;
  });
  for (int i = 0; i < 10; ++i) second(1ms, true);
  EXPECT_EQ(limit_->limit(), 12u);
  for (int i = 0; i < 10; ++i) {
    now_ += 1s;
    limit_->on_sample(now_, 900ms, 12);
    second(200ms, false);
  }
  EXPECT_EQ(limit_->limit(), 5u);
}

}  // namespace
}  // namespace sluice
