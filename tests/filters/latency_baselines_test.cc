#include "filters/limiters/latency_baselines.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/filters/method_keys.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

class LatencyBaselinesTest : public ::testing::Test {
 protected:
  LatencySample sample(uint64_t method, Duration rtt, uint32_t admitted_at = 1) {
    return LatencySample{method, rtt, admitted_at, admitted_at};
  }
  // Feeds n samples of `rtt_ms(i)` spaced 10 ms apart, refreshing as a limiter would.
  template <class F>
  void feed(uint64_t method, int n, F rtt_ms, uint32_t admitted_at = 1) {
    for (int i = 0; i < n; ++i) {
      now_ += 10ms;
      last_ = b_.add(now_, sample(method,
                                  std::chrono::duration_cast<Duration>(
                                      std::chrono::duration<double, std::milli>(rtt_ms(i))),
                                  admitted_at));
      if (i % 10 == 9) b_.refresh(now_);
    }
  }

  LatencyBaselines b_{LatencyBaselines::Options{}};
  TimePoint now_ = TimePoint{} + 1h;
  LatencyBaselines::Judgement last_;
};

TEST(MethodKeyTest, IsStableAndTellsPathsApart) {
  EXPECT_EQ(method_key("/a/b"), method_key("/a/b"));
  EXPECT_NE(method_key("/a/b"), method_key("/a/c"));
  EXPECT_EQ(method_key(""), 1469598103934665603ull);  // FNV-1a offset basis: same everywhere
}

TEST(QueueingEvidenceTest, DemandsMoreThanChanceAllows) {
  EXPECT_FALSE(queueing_evidence(0, 0));
  EXPECT_FALSE(queueing_evidence(8, 10));  // 5.5% by chance
  EXPECT_TRUE(queueing_evidence(9, 10));   // 1.1%
  EXPECT_FALSE(queueing_evidence(15, 20));
  EXPECT_TRUE(queueing_evidence(16, 20));
  EXPECT_FALSE(queueing_evidence(33, 50));
  EXPECT_TRUE(queueing_evidence(34, 50));
}

TEST_F(LatencyBaselinesTest, JudgesNothingUntilAMethodHasEnoughCleanSamples) {
  feed(kGet, LatencyBaselines::kMinClean - 1, [](int) { return 10.0; });
  EXPECT_FALSE(last_.judged);
  EXPECT_FALSE(b_.noload_ms(kGet));
  feed(kGet, 2, [](int) { return 10.0; });
  EXPECT_TRUE(last_.judged);
  EXPECT_DOUBLE_EQ(*b_.noload_ms(kGet), 10.0);
}

TEST_F(LatencyBaselinesTest, EachMethodIsJudgedAgainstItsOwnBaseline) {
  // A 2 ms method and a 40 ms one, interleaved: neither reads as a queue for the other.
  for (int i = 0; i < 100; ++i) {
    feed(kGet, 1, [](int) { return 2.0; });
    feed(kReport, 1, [](int) { return 40.0; });
  }
  EXPECT_DOUBLE_EQ(*b_.noload_ms(kGet), 2.0);
  EXPECT_DOUBLE_EQ(*b_.noload_ms(kReport), 40.0);
  const auto j = b_.add(now_, sample(kReport, 40ms));
  EXPECT_TRUE(j.judged);
  EXPECT_FALSE(j.above);
  EXPECT_NEAR(j.shift, 0.0, 1e-9);
}

TEST_F(LatencyBaselinesTest, AboutHalfOfAVariableServiceIsAboveItsMedianWhateverTheShape) {
  // The sign test's null: without a queue, P(above) is 1/2 for any distribution.
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> lognormal(std::log(40.0), 0.8);
  feed(kGet, 300, [&](int) { return lognormal(rng); });
  int above = 0;
  int judged = 0;
  for (int i = 0; i < 1000; ++i) {
    now_ += 10ms;
    const auto j =
        b_.add(now_, sample(kGet, std::chrono::duration_cast<Duration>(
                                      std::chrono::duration<double, std::milli>(lognormal(rng)))));
    if (i % 10 == 9) b_.refresh(now_);
    judged += j.judged ? 1 : 0;
    above += j.above ? 1 : 0;
  }
  EXPECT_EQ(judged, 1000);
  EXPECT_NEAR(above / 1000.0, 0.5, 0.06);
}

TEST_F(LatencyBaselinesTest, AQueueMakesNearlyEverySampleSlowerThanItsMedian) {
  feed(kGet, 100, [](int i) { return 9.0 + (i % 5) * 0.5; });  // 9..11 ms
  int above = 0;
  for (int i = 0; i < 20; ++i) {
    now_ += 10ms;
    above += b_.add(now_, sample(kGet, 25ms, 20)).above ? 1 : 0;  // +15 ms behind 19 others
  }
  EXPECT_EQ(above, 20);
  EXPECT_TRUE(last_.judged);
}

TEST_F(LatencyBaselinesTest, SamplesAboveTheKneeDoNotTrainTheBaseline) {
  // Clean at admission concurrency 1..4; at 12 every request queues (20 ms instead of 10).
  for (int i = 0; i < 40; ++i)
    feed(
        kGet, 5, [](int) { return 10.0; }, 1 + (i % 4));
  b_.refresh(now_);
  ASSERT_TRUE(b_.knee());
  EXPECT_EQ(*b_.knee(), 4u);
  for (int i = 0; i < 50; ++i)
    feed(
        kGet, 10, [](int) { return 20.0; }, 12);
  EXPECT_DOUBLE_EQ(*b_.noload_ms(kGet), 10.0);  // a baseline re-measured under load would drift
  EXPECT_EQ(*b_.knee(), 4u);
}

TEST_F(LatencyBaselinesTest, ABaselineWithoutFreshCleanSamplesKeepsItsWholeWindow) {
  // 100 calls at 10 ms, then the 8 last clean ones slower (11 ms: within the no-load range, the
  // calls at the knee just before the limit rose past it), then 40 s above the knee only.
  feed(kGet, 100, [](int) { return 10.0; });
  feed(kGet, 8, [](int) { return 11.0; });
  for (int i = 0; i < 40; ++i) {
    feed(
        kGet, 100, [](int) { return 30.0; }, 12);
  }
  b_.refresh(now_);
  // Aged down to its newest samples it would read 11 ms, and the next knee would pass levels
  // that queue by 10%: nothing new was learnt, so the whole window stands.
  EXPECT_DOUBLE_EQ(*b_.noload_ms(kGet), 10.0);
  // Fresh clean samples replace it once there are enough of them.
  feed(kGet, LatencyBaselines::kMinClean, [](int) { return 10.5; });
  b_.refresh(now_);
  EXPECT_DOUBLE_EQ(*b_.noload_ms(kGet), 10.5);
}

TEST_F(LatencyBaselinesTest, KneeIsTheHighestLevelWithoutAQueue) {
  for (int level = 1; level <= 8; ++level) {
    // Up to 5 no queue (half below the median of 10 +-1); from 6 on, every sample waits.
    feed(
        kGet, 20, [level](int i) { return level <= 5 ? 9.5 + (i % 2) : 30.0; }, level);
  }
  b_.refresh(now_);
  ASSERT_TRUE(b_.knee());
  EXPECT_EQ(*b_.knee(), 5u);
}

// Levels 1-4 without a queue (half the samples at 9.5 ms, half at the median, 10.5) for `rounds`
// x 0.4 s (a settled baseline: kMaxClean clean samples), then `n` samples at level 5 of which 40%
// are below the median: one queued call at busy workers, or chance in a small sample.
class KneeShareTest : public LatencyBaselinesTest {
 protected:
  void levels(int rounds, int n) {
    for (int r = 0; r < rounds; ++r) {
      for (uint32_t level = 1; level <= 4; ++level) {
        feed(
            kGet, 10, [](int i) { return i % 2 == 0 ? 9.5 : 10.5; }, level);
      }
    }
    feed(
        kGet, n, [](int i) { return i % 5 < 2 ? 9.5 : 11.0; }, 5);
    b_.refresh(now_);
  }
};

TEST_F(KneeShareTest, FewSamplesFortyPercentBelowTheMedianPass) {
  levels(80, 20);
  ASSERT_TRUE(b_.knee());
  EXPECT_EQ(*b_.knee(), 5u);
}

TEST_F(KneeShareTest, ThousandsOfSamplesFortyPercentBelowTheMedianAreAQueue) {
  // 400 of 1,000 below is far beyond chance (the sign test of queueing_evidence()). Passed, the
  // level would train the baseline, which then judges the next level: under CPU noise the knee
  // climbed one queued level at a time.
  levels(80, 1000);
  ASSERT_TRUE(b_.knee());
  EXPECT_EQ(*b_.knee(), 4u);
  EXPECT_DOUBLE_EQ(*b_.noload_ms(kGet), 10.5);
}

TEST_F(LatencyBaselinesTest, ABaselineOfTheFirstCallsIsNotJudgedBySignTest) {
  // A start: the first 8 calls ran into an empty upstream (9 ms); the next, at concurrency 2, take
  // 8.5 or 9.5 ms (40% below that median), 200 of them in the first decision (one refresh, as a
  // limiter refreshes once a decision). Judged by the sign test, level 2 would fail, the knee stay
  // at 1, and no later call train the baseline: every decision would read a queue. A baseline on
  // fewer than kMaxClean samples is not settled; the 35% rule decides, the level passes and trains
  // it.
  feed(kGet, 8, [](int) { return 9.0; });
  for (int i = 0; i < 200; ++i) {
    now_ += 1ms;
    b_.add(now_, sample(kGet, i % 5 < 2 ? 8500us : 9500us, 2));
  }
  b_.refresh(now_);
  ASSERT_TRUE(b_.knee());
  EXPECT_EQ(*b_.knee(), 2u);
  feed(
      kGet, 200, [](int i) { return i % 5 < 2 ? 8.5 : 9.5; }, 2);
  EXPECT_DOUBLE_EQ(*b_.noload_ms(kGet), 9.5);
}

TEST_F(LatencyBaselinesTest, ServiceThatGotSlowerForGoodIsRelearntAtCleanConcurrency) {
  feed(kGet, 100, [](int i) { return 10.0 + (i % 3); });
  EXPECT_NEAR(*b_.noload_ms(kGet), 11.0, 1.0);
  bool rebuilt = false;
  for (int i = 0; i < static_cast<int>(LatencyBaselines::kFastSamples); ++i) {
    now_ += 10ms;
    rebuilt = rebuilt || b_.add(now_, sample(kGet, 40ms)).rebuilt;
  }
  EXPECT_TRUE(rebuilt);
  EXPECT_DOUBLE_EQ(*b_.noload_ms(kGet), 40.0);
}

TEST_F(LatencyBaselinesTest, ARunOfSlowSamplesWithinTheNoloadRangeRebuildsNothing) {
  // Ten samples in a row above the median but inside the no-load p90: chance, not a new service
  // (a baseline rebuilt on every such run would follow noise, and creep under mild load).
  feed(kGet, 200, [](int i) { return 7.0 + (i % 7); });  // 7..13
  const double before = *b_.noload_ms(kGet);
  for (int i = 0; i < 30; ++i) {
    now_ += 10ms;
    EXPECT_FALSE(b_.add(now_, sample(kGet, 12ms)).rebuilt);
  }
  b_.refresh(now_);
  EXPECT_NEAR(*b_.noload_ms(kGet), before, 1.0);
}

TEST_F(LatencyBaselinesTest, OneLuckyFastSampleDoesNotMoveTheBaseline) {
  feed(kGet, 100, [](int) { return 10.0; });
  feed(kGet, 1, [](int) { return 0.5; });
  b_.refresh(now_);
  EXPECT_DOUBLE_EQ(*b_.noload_ms(kGet), 10.0);
}

TEST_F(LatencyBaselinesTest, BimodalMethodKeepsAStableMedianAndOffset) {
  // 50% at 5 ms, 50% at 50 ms: the median sits at one edge, and the offset (the no-load mean of
  // log(rtt / median)) is what makes a shift of zero mean "no queue".
  std::mt19937_64 rng(5);
  std::bernoulli_distribution fast(0.5);
  feed(kGet, 256, [&](int) { return fast(rng) ? 5.0 : 50.0; });
  double shift = 0;
  for (int i = 0; i < 200; ++i) {
    now_ += 10ms;
    shift += b_.add(now_, sample(kGet, fast(rng) ? 5ms : 50ms)).shift;
  }
  EXPECT_NEAR(shift / 200, 0.0, 0.4);
}

TEST_F(LatencyBaselinesTest, IdleMethodsAreForgottenAndTheNumberOfMethodsIsBounded) {
  LatencyBaselines small(LatencyBaselines::Options{30s, 1, 2});
  for (int m = 0; m < 3; ++m) {
    for (int i = 0; i < 10; ++i) {
      now_ += 10ms;
      small.add(now_, sample(method_key("/m" + std::to_string(m)), 10ms));
    }
  }
  EXPECT_EQ(small.methods(), 2u);  // the third found no room: not judged, not tracked
  EXPECT_FALSE(small.noload_ms(method_key("/m2")));
  now_ += 31s;
  small.refresh(now_);
  EXPECT_EQ(small.methods(), 0u);
}

TEST_F(LatencyBaselinesTest, TiesTakeNoSideButShowNoQueue) {
  feed(kGet, 20, [](int) { return 10.0; });
  const auto j = b_.add(now_, sample(kGet, 10ms));
  EXPECT_TRUE(j.judged);
  EXPECT_TRUE(j.tie);
  EXPECT_FALSE(j.above);
}

TEST_F(LatencyBaselinesTest, SnapshotNamesEveryReadyMethod) {
  feed(kGet, 10, [](int) { return 3.0; });
  b_.name_method(kGet, "/pkg.Svc/Get");
  const auto snap = b_.snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].method, "/pkg.Svc/Get");
  EXPECT_DOUBLE_EQ(snap[0].rtt_noload_ms, 3.0);
  EXPECT_EQ(snap[0].samples, 10u);
}

}  // namespace
}  // namespace sluice
