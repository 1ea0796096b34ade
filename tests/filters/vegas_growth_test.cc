// rtt_gradient's growth: slow start until the first cut, recovery after a cut.
#include <gtest/gtest.h>

#include <string>

#include "filters/rtt_gradient/vegas_limit.h"
#include "tests/filters/method_keys.h"
#include "tests/filters/vegas_limit_fixture.h"

namespace sluice {
namespace {

TEST_F(VegasLimitTest, SlowStartDoublesUntilTheFirstCutThenGrowsAdditively) {
  // A start under load: demand refused, calls at their no-load latency. At 1,000 calls/s a
  // decision (50 ms) holds 50 samples.
  learn();
  // Three decisions: 20 -> 160 (additive growth would give ~23).
  for (int i = 0; i < 150; ++i) {
    feed(
        1, [i](int) { return 9.0 + (i % 3); }, limit_->limit(), /*pressure=*/true, kGet, 1ms);
  }
  EXPECT_GE(limit_->limit(), 80u);
  EXPECT_NE(limit_->last_reason().find("slow start"), std::string::npos);
  // A queue within tolerance (every call 10.5 ms of a 10 ms median: the start's own noise on a
  // busy host) holds the doubling but does not end it.
  feed(
      50, [](int) { return 10.5; }, limit_->limit(), true, kGet, 1ms);
  const uint32_t held = limit_->limit();
  feed(
      100, [](int i) { return 9.0 + (i % 3); }, limit_->limit(), true, kGet, 1ms);
  EXPECT_GE(limit_->limit(), 2 * held - 1);
  // The first cut (a queue beyond tolerance: 14 ms, confirmed by a second decision; x0.71, not
  // below half the limit before: no recovery) ends it:
  // growth is additive from then on, once the queue is gone.
  const uint32_t before = limit_->limit();
  feed(
      150, [](int) { return 14.0; }, limit_->limit(), true, kGet, 1ms);
  const uint32_t cut = limit_->limit();
  ASSERT_LT(cut, before);
  for (int i = 0; i < 10; ++i) {
    feed(
        50, [](int j) { return 9.0 + (j % 3); }, limit_->limit(), true, kGet, 1ms);
  }
  EXPECT_GT(limit_->limit(), cut);
  EXPECT_LT(limit_->limit(), cut + 40u);  // ten decisions of +smoothing x sqrt(limit)
  EXPECT_EQ(limit_->last_reason().find("slow start"), std::string::npos);
}

TEST_F(VegasLimitTest, SlowStartNeedsRefusedDemandAndEnoughSamples) {
  learn();
  // Demand met (nothing waited): the limit is not in use, nothing to grow into.
  feed(
      50, [](int i) { return 9.0 + (i % 3); }, 20, /*pressure=*/false, kGet, 1ms);
  EXPECT_EQ(limit_->limit(), 20u);
  // Demand refused at a low rate: decisions of fewer than min_samples grow additively.
  feed(
      10, [](int i) { return 9.0 + (i % 3); }, 20, true, kGet, 100ms);
  EXPECT_GT(limit_->limit(), 20u);
  EXPECT_LT(limit_->limit(), 40u);
}

// Recovery after a cut (TCP's slow start up to ssthresh): at 1,000 calls/s, decisions of 50
// samples at the limit's concurrency.
class VegasRecoveryTest : public VegasLimitTest {
 protected:
  // `n` decisions of calls at their no-load latency, at concurrency `at` (0: the limit). Each
  // admitted with the upstream empty: the knee stays low and does not floor the cuts.
  void clear(int n, bool pressure, uint32_t at = 0) {
    for (int d = 0; d < n; ++d) {
      feed(
          50, [](int i) { return 9.0 + (i % 3); }, /*admitted_at=*/1, pressure, kGet, 1ms,
          at ? at : limit_->limit());
    }
  }
  // A 2-core host's hiccup: every call in flight at the limit 5x slower for 60 ms (overwhelming:
  // cut at once, x0.25). Returns the limit after it.
  uint32_t hiccup() {
    feed(
        60, [](int) { return 50.0; }, limit_->limit(), true, kGet, 1ms);
    return limit_->limit();
  }
  void SetUp() override {
    make([](VegasLimit::Options& o) { o.initial_limit = 40; });
    learn();
  }
};

TEST_F(VegasRecoveryTest, ACutBelowWhatRanWithoutAQueueDoublesBackToHalfTheLimitBefore) {
  clear(1, /*pressure=*/false);  // the limit in use, no queue: 40 ran clear
  const uint32_t before = limit_->limit();
  ASSERT_GE(before, 40u);
  const uint32_t first = hiccup();
  ASSERT_LE(first, before / 3);
  // The queue the hiccup left cuts again before any recovery: the threshold stays at half the
  // limit before the first cut.
  ASSERT_LT(hiccup(), first);
  clear(4, /*pressure=*/true);
  EXPECT_GE(limit_->limit(), before / 2);  // 2.5 -> 5 -> 10 -> 20: additive growth gives ~4
  EXPECT_NE(limit_->last_reason().find("recovery"), std::string::npos) << limit_->last_reason();
  EXPECT_NE(limit_->describe_last_decision().find("(recovery: no queueing, demand refused)"),
            std::string::npos)
      << limit_->describe_last_decision();
  // Additive from there.
  const uint32_t recovered = limit_->limit();
  clear(4, true);
  EXPECT_GT(limit_->limit(), recovered);
  EXPECT_LT(limit_->limit(), recovered + 6);
  EXPECT_EQ(limit_->last_reason().find("recovery"), std::string::npos);
}

TEST_F(VegasRecoveryTest, NeedsRefusedDemand) {
  clear(1, false);
  const uint32_t cut = hiccup();
  clear(4, /*pressure=*/false);  // the demand fits under the cut limit: nothing to recover for
  EXPECT_LE(limit_->limit(), cut + 2);
}

TEST_F(VegasRecoveryTest, ACutAfterTheRecoveryDoubledSetsALowerThreshold) {
  // TCP's loss in slow start: the doubling found a queue below the old threshold.
  clear(1, false);
  hiccup();
  hiccup();
  const uint32_t low = limit_->limit();
  clear(2, true);  // doubled once, toward ~20 (a quiet decision of a few samples first)
  ASSERT_GE(limit_->limit(), 2 * low - 1);
  const uint32_t doubled = limit_->limit();
  hiccup();
  clear(4, true);
  EXPECT_LE(limit_->limit(), doubled);  // back to half of `doubled` at most, then additive
}

TEST_F(VegasRecoveryTest, StopsAtTheConcurrencyLastSeenWithoutAQueue) {
  // The decisions before the cut ran clear at 8 only (a sustained overload holds the limit about
  // there): recovery never takes the limit past what has run without a queue.
  clear(2, false, /*at=*/8);
  ASSERT_EQ(limit_->limit(), 40u);  // not in use: held
  const uint32_t cut = hiccup();    // from the 40 the hiccup filled: 10
  ASSERT_GT(cut, 8u);
  clear(2, true);
  EXPECT_LE(limit_->limit(), cut + 2);
  EXPECT_EQ(limit_->last_reason().find("recovery"), std::string::npos);
}

}  // namespace
}  // namespace sluice
