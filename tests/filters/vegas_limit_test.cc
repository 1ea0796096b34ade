#include "filters/rtt_gradient/vegas_limit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/filters/method_keys.h"
#include "tests/filters/vegas_limit_fixture.h"

namespace sluice {
namespace {

TEST_F(VegasLimitTest, StartsAtTheInitialLimitClampedIntoRange) {
  EXPECT_EQ(limit_->limit(), 20u);
  make([](VegasLimit::Options& o) {
    o.initial_limit = 5000;
    o.max_limit = 1000;
  });
  EXPECT_EQ(limit_->limit(), 1000u);
  make([](VegasLimit::Options& o) {
    o.initial_limit = 0;
    o.min_limit = 2;
  });
  EXPECT_EQ(limit_->limit(), 2u);
}

TEST_F(VegasLimitTest, HoldsALimitNobodyUses) {
  feed(2000, [](int i) { return 9.0 + (i % 3); });
  EXPECT_EQ(limit_->limit(), 20u);
  EXPECT_EQ(limit_->last_reason(), "");
}

TEST_F(VegasLimitTest, GrowsWhileTheLimitIsUsedWithoutAQueue) {
  learn();
  feed(
      200, [](int i) { return 9.0 + (i % 3); }, 1, /*pressure=*/true);
  EXPECT_GT(limit_->limit(), 20u);
  EXPECT_NE(limit_->last_reason().find("no queueing"), std::string::npos);
}

TEST_F(VegasLimitTest, OneSlowSampleNeverMovesTheLimit) {
  // A decision needs min_samples samples: a lone outlier, at a low rate, decides nothing.
  learn();
  now_ += 1s;
  limit_->on_sample(now_, LatencySample{kGet, 500ms, 20, 20});
  now_ += 1s;
  limit_->on_sample(now_, LatencySample{kGet, 10ms, 1, 1});
  EXPECT_EQ(limit_->limit(), 20u);
}

TEST_F(VegasLimitTest, AtALowRateTheDecisionWaitsForEnoughSamples) {
  // 2 calls/s: a decision needs ten samples, five seconds; until then it stays open. Slow
  // samples inside the no-load range (12 ms against 9..11) are not enough to cut before that.
  learn();
  for (int i = 0; i < 9; ++i) {
    now_ += 500ms;
    limit_->on_sample(now_, LatencySample{kGet, 12ms, 20, 20});
  }
  EXPECT_EQ(limit_->limit(), 20u);
  // Far beyond it (every sample over the no-load p90 / 0.85), four samples are evidence.
  make([](VegasLimit::Options&) {});
  learn();
  for (int i = 0; i < 3; ++i) {
    now_ += 500ms;
    limit_->on_sample(now_, LatencySample{kGet, 100ms, 20, 20});
  }
  EXPECT_EQ(limit_->limit(), 20u);  // three are not
  for (int i = 0; i < 3; ++i) {
    now_ += 500ms;
    limit_->on_sample(now_, LatencySample{kGet, 100ms, 20, 20});
  }
  EXPECT_LT(limit_->limit(), 20u);
}

TEST_F(VegasLimitTest, VariableButIdleServiceNeverLowersTheLimit) {
  // The failure the issue measured: 70-130 ms uniformly, one call at a time, with demand. The
  // old minimum-based signal read the spread as a queue.
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> uniform(70, 130);
  std::lognormal_distribution<double> lognormal(std::log(40.0), 0.8);
  feed(
      3000, [&](int) { return uniform(rng); }, 1, true);
  EXPECT_GE(limit_->limit(), 20u);
  make([](VegasLimit::Options&) {});
  feed(
      3000, [&](int) { return lognormal(rng); }, 1, true);
  EXPECT_GE(limit_->limit(), 20u);
}

TEST_F(VegasLimitTest, MethodMixShiftIsNotAQueue) {
  // 2 ms and 40 ms calls, the mix moving from 90/10 to 10/90: every call is judged against its
  // own method's baseline, so the shift moves no limit down.
  std::mt19937_64 rng(2);
  for (double share_slow : {0.1, 0.5, 0.9}) {
    std::bernoulli_distribution slow(share_slow);
    for (int i = 0; i < 1000; ++i) {
      const bool s = slow(rng);
      feed(
          1, [s](int) { return s ? 40.0 : 2.0; }, 2, true, s ? kReport : kGet);
    }
    EXPECT_GE(limit_->limit(), 20u) << "slow share " << share_slow;
  }
}

TEST_F(VegasLimitTest, AStandingQueueShrinksTheLimitAtOnce) {
  learn();
  const uint32_t before = limit_->limit();
  feed_constant(20, 40.0, 20);  // every call waits 30 ms behind others: two decisions
  EXPECT_LT(limit_->limit(), before);
  EXPECT_NE(limit_->last_reason().find("queueing"), std::string::npos);
}

TEST_F(VegasLimitTest, AWellSampledSmallQueueWithinToleranceGrowsOnlyForRefusedDemand) {
  // 1,000 calls/s, every call 6% slower than its median (gradient 0.94, within tolerance): with
  // 50 samples a decision, the sign test calls that a queue, but one of 20 x 0.06 = 1.2 calls is
  // below the allowance (sqrt(20) = 4.5). Without refused demand the limit holds...
  learn();
  const auto slightly_slower = [](int i) { return 10.6 + 0.1 * (i % 3); };
  feed(300, slightly_slower, 20, /*pressure=*/false, kGet, 1ms);
  EXPECT_EQ(limit_->limit(), 20u);
  // ...with it, it grows (it held before: a limit kept below the demand by a 5% slowdown).
  feed(300, slightly_slower, 20, /*pressure=*/true, kGet, 1ms);
  EXPECT_GT(limit_->limit(), 20u);
  EXPECT_NE(limit_->last_reason().find("below the allowance"), std::string::npos)
      << limit_->last_reason();
  // At 100 calls/s (decisions of ten samples) the same evidence holds the limit: there it is a
  // slowdown of whole calls at a small limit.
  make([](VegasLimit::Options&) {});
  learn();
  feed(300, slightly_slower, 20, /*pressure=*/true);
  EXPECT_EQ(limit_->limit(), 20u);
}

TEST_F(VegasLimitTest, AQueueThatAddsLessThanTheDelayToleranceIsNotCut) {
  // A 2 ms method at 1,000 calls/s and concurrency 20, demand refused, every call 0.6-0.8 ms
  // slower (30-40%, gradient ~0.74: beyond `tolerance`). On a busy 2-core host that is CPU
  // contention that grows with the load, whatever sluice admits; cutting for it shed calls the
  // upstream had room for. Below the default delay_tolerance (1 ms) it is not cut, and the
  // limit grows into the refused demand as if there were no queue.
  const auto fast = [](int i) { return 1.8 + 0.2 * (i % 3); };
  const auto slower = [](int i) { return 2.6 + 0.1 * (i % 3); };
  feed(50, fast);
  feed(101, slower, 20, /*pressure=*/true, kGet, 1ms);
  EXPECT_GE(limit_->limit(), 20u);
  feed(400, slower, limit_->limit(), true, kGet, 1ms);
  EXPECT_GE(limit_->limit(), 25u);
  EXPECT_NE(limit_->last_reason().find("< delay_tolerance 1.00 ms"), std::string::npos)
      << limit_->last_reason();
  EXPECT_NE(limit_->describe_last_decision().find("queueing within delay_tolerance"),
            std::string::npos)
      << limit_->describe_last_decision();
  // Without the delay tolerance the same calls are a queue beyond `tolerance`: cut.
  make([](VegasLimit::Options& o) { o.delay_tolerance = Duration::zero(); });
  feed(50, fast);
  feed(101, slower, 20, true, kGet, 1ms);
  EXPECT_LT(limit_->limit(), 20u);
  // At 100 calls/s (decisions of ten samples) the queue is not cut either, but holds the limit.
  make([](VegasLimit::Options&) {});
  feed(50, fast);
  feed(300, slower, 20, true);
  EXPECT_EQ(limit_->limit(), 20u);
}

TEST_F(VegasLimitTest, AQueueBeyondTheDelayToleranceIsCut) {
  // The same method with calls 1.6 ms slower (1.8x): a queue worth cutting for.
  feed(50, [](int i) { return 1.8 + 0.2 * (i % 3); });
  feed(
      101, [](int i) { return 3.5 + 0.1 * (i % 3); }, 20, /*pressure=*/true, kGet, 1ms);
  EXPECT_LT(limit_->limit(), 20u);
  EXPECT_NE(limit_->last_reason().find("queueing"), std::string::npos) << limit_->last_reason();
}

TEST_F(VegasLimitTest, ARunOfFarSamplesWithinTheDelayToleranceIsNotCut) {
  // A 0.2 ms method whose calls take 0.5 ms (2.5x, far beyond the no-load range: the run of far
  // samples that cuts at once) add 0.3 ms each: within the delay tolerance.
  const auto fast = [](int i) { return 0.18 + 0.02 * (i % 3); };
  const auto slower = [](int i) { return 0.5 + 0.01 * (i % 3); };
  feed(50, fast);
  feed(20, slower, 20, /*pressure=*/true, kGet, 1ms);
  EXPECT_EQ(limit_->limit(), 20u) << limit_->last_reason();
  make([](VegasLimit::Options& o) { o.delay_tolerance = Duration::zero(); });
  feed(50, fast);
  feed(20, slower, 20, true, kGet, 1ms);
  EXPECT_LT(limit_->limit(), 20u);
  EXPECT_NE(limit_->describe_last_decision().find("overwhelming"), std::string::npos)
      << limit_->describe_last_decision();
}

TEST_F(VegasLimitTest, ACutThatDoesNotLowerTheLatencyIsUndoneAndTheSlowdownTolerated) {
  // 1,000 calls/s, every call 25% slower whatever the concurrency (neighbours took the CPU): not
  // beyond the no-load range, but every sample above its median, twice: a cut. At the lower
  // concurrency the calls are just as slow, which a queue in front of the workers would not
  // give: undone.
  learn();
  // Half a second of calls at their no-load times: how much decisions differ by chance.
  feed(
      500, [](int i) { return 9.0 + (i % 3); }, 1, false, kGet, 1ms);
  const auto slow = [](int i) { return 12.5 + 0.1 * (i % 3); };
  cut_then(slow, slow);
  EXPECT_EQ(limit_->limit(), 20u);
  EXPECT_NE(limit_->last_reason().find("cut undone"), std::string::npos) << limit_->last_reason();
  EXPECT_NEAR(*limit_->state().tolerated_slowdown, 0.25, 0.03);
  // The same slowdown at the old concurrency is tolerated while it lasts: never cut again, and
  // with demand refused (pressure) the limit grows as if there were no slowdown.
  feed(500, slow, 20, true, kGet, 1ms);
  EXPECT_GT(limit_->limit(), 20u);
  EXPECT_EQ(limit_->last_reason().find("queueing:"), std::string::npos) << limit_->last_reason();
}

TEST_F(VegasLimitTest, RightAfterStartACutThatDoesNotLowerTheLatencyIsUndoneToo) {
  // The same slowdown from the first well-sampled decisions, before consecutive decisions have
  // shown how much they differ by chance: that is estimated from the samples' own spread (it
  // waited for kMinSteps pairs, and a busy host's start cut 20 -> 16 -> 15 and shed meanwhile).
  learn();
  const auto slow = [](int i) { return 12.5 + 0.2 * ((i * 7) % 11 - 5); };  // 11.5 .. 13.5 ms
  cut_then(slow, slow);
  EXPECT_GE(limit_->limit(), 20u);
  EXPECT_TRUE(limit_->state().tolerated_slowdown.has_value());
  EXPECT_GT(*limit_->state().tolerated_slowdown, 0.15);
}

TEST_F(VegasLimitTest, RightAfterStartACutThatLowersTheLatencyStands) {
  learn();
  cut_then([](int i) { return 12.5 + 0.2 * ((i * 7) % 11 - 5); },
           [](int i) { return 9.0 + (i % 3); });
  EXPECT_LT(limit_->limit(), 20u);
  EXPECT_EQ(limit_->last_reason().find("cut undone"), std::string::npos) << limit_->last_reason();
}

TEST_F(VegasLimitTest, ACutThatLowersTheLatencyStands) {
  // The same cut, but at the lower concurrency the calls are back at their no-load times: the
  // queue was in front of the workers, and the cut removed it.
  learn();
  feed(
      500, [](int i) { return 9.0 + (i % 3); }, 1, false, kGet, 1ms);
  cut_then([](int i) { return 12.5 + 0.1 * (i % 3); }, [](int i) { return 9.0 + (i % 3); });
  EXPECT_LT(limit_->limit(), 20u);
  EXPECT_EQ(limit_->last_reason().find("cut undone"), std::string::npos) << limit_->last_reason();
}

TEST_F(VegasLimitTest, AtALowRateACutIsNotChecked) {
  // 100 calls/s: decisions of ten samples, whose median cannot tell a queue from noise. The cut
  // stands as it always did.
  learn();
  const auto slow = [](int i) { return 12.5 + 0.1 * (i % 3); };
  feed(30, slow, 20, true);
  const uint32_t cut = limit_->limit();
  ASSERT_LT(cut, 20u);
  feed(30, slow, cut, true);
  EXPECT_LE(limit_->limit(), cut);
}

TEST_F(VegasLimitTest, DescribesEveryDecisionHoldsIncluded) {
  // One line per decision (the filter logs it at debug level): what it saw and what it did, so
  // that a run that shed can be explained without a rebuild.
  EXPECT_EQ(limit_->decisions_taken(), 0u);
  std::vector<std::string> lines;
  uint64_t seen = 0;
  const auto run = [&](int n, auto rtt_ms, uint32_t concurrency) {
    for (int i = 0; i < n; ++i) {
      now_ += 1ms;
      if (concurrency > 1) limit_->on_demand_pressure(now_);  // demand refused
      limit_->on_sample(now_, LatencySample{kGet, ms(rtt_ms(i)), concurrency, concurrency});
      if (limit_->decisions_taken() != seen) {
        seen = limit_->decisions_taken();
        lines.push_back(limit_->describe_last_decision());
      }
    }
  };
  learn();
  ASSERT_GT(limit_->decisions_taken(), 0u);
  EXPECT_NE(limit_->describe_last_decision().find("limit 20 -> 20 (no queueing); samples "),
            std::string::npos)
      << limit_->describe_last_decision();
  // Calls 25% slower whatever the concurrency: a cut, checked at the lower concurrency, undone.
  const auto slow = [](int i) { return 12.5 + 0.1 * (i % 3); };
  run(
      500, [](int i) { return 9.0 + (i % 3); }, 1);
  run(101, slow, 20);
  const uint32_t cut = limit_->limit();
  ASSERT_LT(cut, 20u);
  run(150, slow, cut);
  ASSERT_EQ(limit_->limit(), 20u);
  const auto has = [&](const std::string& part) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(has("limit 20 -> 20 (queueing within tolerance); samples 50, judged 50, "));
  EXPECT_TRUE(has("limit 20 -> " + std::to_string(cut) +
                  " (cut: queueing beyond tolerance); samples 50, judged 50, above 50, ties 0, "
                  "far 0, drops 0; median shift +0.2"));
  EXPECT_TRUE(
      has(" ms), gradient 0.79, tolerated +0.000; peak concurrency 20, knee 1, demand refused; "
          "evidence yes, confirmed yes"));
  EXPECT_TRUE(
      has("limit " + std::to_string(cut) + " -> 20 (the last cut undone: not a queue); samples "));
  EXPECT_TRUE(has("; the last cut's check: latency fell +0.000 of +0.234 predicted"));
  for (const std::string& l : lines) EXPECT_LT(l.size(), 511u) << l;  // never truncated
}

// The rig at 7,000 calls/s (bench/stall_max.py, debug log): 250 calls of a decision at their
// no-load times, then a 2-core host's CPU hiccup: a few calls in a row 2x slower, piled up to the
// limit, cut 47 -> 23 at once (unchecked: the decision was the run). The next decision's calls,
// still at concurrency 47, were as fast as ever, and regrowing took a second of shedding.
class VegasStallTest : public VegasLimitTest {
 protected:
  // Calls every `gap` at concurrency 16 (limit 20, not in use: it holds), a decision of them;
  // then, in the next one, 44 at their no-load times and `far` in a row at `far_ms`: at 1,000
  // calls/s the decision closes on the run. Returns the limit after.
  uint32_t hiccup(int far = 5, double far_ms = 100, Duration gap = 1ms) {
    const auto quiet = [](int i) { return 9.0 + (i % 3); };
    learn();
    feed(200, quiet, kBusy, false, kGet, gap);
    for (const uint64_t d = limit_->decisions_taken(); limit_->decisions_taken() == d;) {
      feed(1, quiet, kBusy, false, kGet, gap);
    }
    feed(44, quiet, kBusy, false, kGet, gap);
    feed(
        far, [far_ms](int) { return far_ms; }, kBusy, false, kGet, gap);
    feed(1, quiet, kBusy, false, kGet, gap);
    return limit_->limit();
  }
  static constexpr uint32_t kBusy = 16;
};

TEST_F(VegasStallTest, ACutOnAStallOfEveryCallThatIsOverIsUndone) {
  const uint32_t cut = hiccup();
  ASSERT_LT(cut, 20u);
  EXPECT_NE(limit_->describe_last_decision().find("overwhelming"), std::string::npos)
      << limit_->describe_last_decision();
  // Calls still at concurrency 16 (the piled-up calls drain), back at their no-load times.
  feed(
      150, [](int i) { return 9.0 + (i % 3); }, kBusy, false, kGet, 1ms);
  EXPECT_EQ(limit_->limit(), 20u);
  EXPECT_NE(limit_->last_reason().find("a stall of every call, over"), std::string::npos)
      << limit_->last_reason();
  // Nothing is tolerated: the next queue is cut as before.
  EXPECT_EQ(*limit_->state().tolerated_slowdown, 0.0);
}

TEST_F(VegasStallTest, ACutOnAStallThatGoesOnStands) {
  const uint32_t cut = hiccup();
  ASSERT_LT(cut, 20u);
  feed(
      150, [](int) { return 100.0; }, kBusy, false, kGet, 1ms);
  EXPECT_LE(limit_->limit(), cut);
  EXPECT_EQ(limit_->last_reason().find("stall"), std::string::npos) << limit_->last_reason();
}

TEST_F(VegasStallTest, ACutOnAQueueStandsWhileCallsNearItsConcurrencyAreSlow) {
  // A queue in front of the workers: calls that still run at nearly the old concurrency are
  // slow (here 1.5x at concurrency 14), those at the cut's concurrency fast.
  const uint32_t cut = hiccup();
  ASSERT_LT(cut, 20u);
  for (int i = 0; i < 150; ++i) {
    now_ += 1ms;
    const bool near_old = i % 2 == 0;
    limit_->on_sample(now_, LatencySample{kGet, ms(near_old ? 15.0 : 9.0 + (i % 3)),
                                          near_old ? 14u : cut, near_old ? 14u : cut});
  }
  EXPECT_LE(limit_->limit(), cut);
  EXPECT_EQ(limit_->last_reason().find("stall"), std::string::npos) << limit_->last_reason();
}

TEST_F(VegasStallTest, AtALowRateACutOnAStallIsNotChecked) {
  // 100 calls/s: the cut's decision had fewer than kCheckMinSamples calls, as with a service
  // whose own times vary (2 workers, 5 / 50 ms calls: a run of slow calls is a burst of queue
  // that passes by itself, and undoing its cut kept the limit at 8 instead of 2).
  const uint32_t cut = hiccup(5, 100, 10ms);
  ASSERT_LT(cut, 20u);
  feed(
      60, [](int i) { return 9.0 + (i % 3); }, kBusy, false, kGet, 10ms);
  EXPECT_EQ(limit_->last_reason().find("stall"), std::string::npos) << limit_->last_reason();
}

TEST_F(VegasLimitTest, AnOverwhelmingCutIsNeverUndone) {
  // Calls 10x slower (a stall): cut at once; at the lower concurrency they are no faster (a
  // stall does not depend on concurrency), but a slowdown beyond 2x is never tolerated.
  learn();
  feed(
      100, [](int) { return 100.0; }, 20, false, kGet, 1ms);
  const uint32_t cut = limit_->limit();
  ASSERT_LT(cut, 20u);
  feed(
      300, [](int) { return 100.0; }, cut, false, kGet, 1ms);
  EXPECT_LE(limit_->limit(), cut);
  EXPECT_EQ(limit_->last_reason().find("cut undone"), std::string::npos) << limit_->last_reason();
}

TEST_F(VegasLimitTest, ARunOfFarSamplesCutsAtOnceWhateverCameBeforeItInTheDecision) {
  // The trace of a real 10 -> 40 ms slowdown at one worker (test_admission): samples a hair above
  // their median, then every call far beyond the no-load range, each later one behind a longer
  // upstream queue. The decision must not wait for min_samples (nor hold on an unconfirmed sign
  // test) while the queue grows: four far samples in a row cut it, from the concurrency they saw.
  learn();
  feed_constant(5, 10.3);
  const std::array<double, 5> rtt = {40, 68, 95, 123, 151};
  const std::array<uint32_t, 5> concurrency = {4, 6, 8, 10, 13};
  for (std::size_t i = 0; i < rtt.size(); ++i) {
    now_ += 40ms;
    limit_->on_sample(now_, LatencySample{kGet, ms(rtt[i]), concurrency[i], 1});
  }
  EXPECT_LE(limit_->limit(), 3u) << limit_->last_reason();
  EXPECT_NE(limit_->last_reason().find("queueing"), std::string::npos) << limit_->last_reason();
}

TEST_F(VegasLimitTest, AMarginalMajorityNeedsASecondDecisionToCut) {
  // 9 of 10 above the median is evidence, but a single such decision errs 1% of the time: a cut
  // needs the next decision to agree (unless every sample is far beyond the no-load range). At
  // 1.25x the median (beyond tolerance, not far), 20 calls/s: a decision per 10 samples.
  learn();
  feed(
      10, [](int i) { return i < 9 ? 12.5 : 9.0; }, 20, false, kGet, 50ms);
  feed(
      1, [](int) { return 12.5; }, 20, false, kGet, 50ms);  // closes the first decision
  EXPECT_EQ(limit_->limit(), 20u) << limit_->last_reason();
  feed(
      9, [](int i) { return i < 8 ? 12.5 : 9.0; }, 20, false, kGet, 50ms);
  feed(
      1, [](int) { return 12.5; }, 20, false, kGet, 50ms);  // closes the second: 9 of 10 again
  EXPECT_LT(limit_->limit(), 20u) << limit_->last_reason();
}

TEST_F(VegasLimitTest, AQuietShortDecisionBetweenTwoWithEvidenceBreaksTheConfirmation) {
  // 20 calls/s (a sample per update_interval): a decision with 9 of 10 above, one quiet decision
  // of a single sample at its no-load time, and another 9 of 10. The quiet one closed early
  // because it was quiet; skipped over, it let the second decision confirm the first into a cut
  // (an idle service with a variable latency met that in 1 of 8 simulated minutes).
  learn();
  const auto nine_of_ten = [](int i) { return i < 9 ? 12.5 : 9.0; };  // 1.25x: beyond tolerance
  feed(10, nine_of_ten, 20, false, kGet, 50ms);
  feed(
      1, [](int) { return 9.0; }, 1, false, kGet, 50ms);
  feed(10, nine_of_ten, 20, false, kGet, 50ms);
  feed(
      1, [](int) { return 9.0; }, 1, false, kGet, 50ms);  // closes the second decision
  EXPECT_EQ(limit_->limit(), 20u) << limit_->last_reason();
  // Two such decisions in a row are a queue.
  feed(10, nine_of_ten, 20, false, kGet, 50ms);
  feed(10, nine_of_ten, 20, false, kGet, 50ms);
  feed(
      1, [](int) { return 9.0; }, 1, false, kGet, 50ms);
  EXPECT_LT(limit_->limit(), 20u) << limit_->last_reason();
}

TEST_F(VegasLimitTest, QuietSamplesBetweenTwoDecisionsWithEvidenceBreakTheConfirmation) {
  // 5,000 calls/s (decisions of 250 samples), as a busy 2-core host gives them: a decision whose
  // calls are 7% slower (evidence, within tolerance: no cut), then 100 calls at their no-load
  // times, then a CPU hiccup: three far samples (fewer than an overwhelming run) and 30 calls 25%
  // slower. The far sample resets the decision; the decision before the quiet ones must not
  // confirm it into a cut (it did: 20 -> 16).
  learn();
  const auto no_load = [](int i) { return 9.0 + (i % 3); };
  now_ += 60ms;
  feed(
      250, [](int i) { return 10.6 + 0.1 * (i % 3); }, 20, false, kGet, 200us);
  feed(100, no_load, 20, false, kGet, 200us);
  feed(
      3, [](int) { return 30.0; }, 20, false, kGet, 200us);
  feed(
      30, [](int) { return 12.5; }, 20, false, kGet, 200us);
  now_ += 60ms;
  feed(1, no_load, 20, false, kGet, 200us);
  EXPECT_EQ(limit_->limit(), 20u) << limit_->last_reason();
  // The same hiccup's decision followed by another with evidence is a queue that went on: cut.
  feed(
      300, [](int) { return 12.5; }, 20, false, kGet, 200us);
  EXPECT_LT(limit_->limit(), 20u);
  EXPECT_NE(limit_->last_reason().find("queueing"), std::string::npos) << limit_->last_reason();
}

TEST_F(VegasLimitTest, DecreaseStartsFromTheMostConcurrencyTheSamplesSaw) {
  // Admitted at 2 permits each, but a burst brought 12 in flight while they ran: the decrease
  // starts from 12, not from 2 (in-flight at admission is only a lower bound).
  learn();
  feed(
      6, [](int) { return 30.0; }, 2, false, kGet, 10ms, 12);  // until the first cut
  EXPECT_GE(limit_->limit(), 3u);                              // 12 x a gradient floor of 0.25
  EXPECT_LE(limit_->limit(), 12u);
}

TEST_F(VegasLimitTest, ADecreaseFromAboveTheKneeStopsAtTheKnee) {
  // Concurrency 1..4 showed no queue: one decision does not cut below 4, even if the service
  // itself slowed down (which the next samples, at the knee, will tell).
  for (int i = 0; i < 40; ++i)
    feed(
        5, [](int j) { return 9.0 + (j % 3); }, 1 + (i % 4));
  feed(
      20, [](int) { return 9.0 + 0.5; }, 4, true);
  ASSERT_EQ(*limit_->latency_baselines().knee(), 4u);
  feed_constant(12, 200.0, 16);
  EXPECT_EQ(limit_->limit(), 4u);
}

TEST_F(VegasLimitTest, SlowerServiceAtCleanConcurrencyIsRelearntAndTheLimitHolds) {
  for (int i = 0; i < 40; ++i)
    feed(
        5, [](int j) { return 9.0 + (j % 3); }, 1 + (i % 4));
  make([](VegasLimit::Options& o) { o.initial_limit = 4; });
  for (int i = 0; i < 40; ++i)
    feed(
        5, [](int j) { return 9.0 + (j % 3); }, 1 + (i % 4));
  // The service is now 4x slower at every concurrency: the knee's samples show it, the baseline
  // is rebuilt, and after that the limit is not cut again.
  feed(
      200, [](int j) { return 39.0 + (j % 3); }, 4, true);
  const uint32_t settled = limit_->limit();
  feed(
      200, [](int j) { return 39.0 + (j % 3); }, 4, true);
  EXPECT_GE(limit_->limit(), settled);
  EXPECT_NEAR(*limit_->latency_baselines().noload_ms(kGet), 40.0, 2.0);
}

TEST_F(VegasLimitTest, DropsInFlightShrinkTheLimit) {
  learn();
  feed_constant(10, 10.0, 20);
  now_ += 100ms;
  limit_->on_drop(now_, 200ms, kGet);  // closes the decision before it, then counts
  const uint32_t before = limit_->limit();
  feed(
      1, [](int) { return 10.0; }, 20, false, kGet, 60ms);  // the decision, 50 ms on
  EXPECT_LT(limit_->limit(), before);                       // x0.9
  EXPECT_NE(limit_->last_reason().find("drop"), std::string::npos);
}

TEST_F(VegasLimitTest, DropSoonerThanTheMethodCanAnswerIsIgnored) {
  learn();
  now_ += 100ms;
  limit_->on_drop(now_, 2ms, kGet);  // a 2 ms deadline on a 10 ms method: the caller's choice
  feed_constant(1, 10.0);
  EXPECT_EQ(limit_->limit(), 20u);
}

TEST_F(VegasLimitTest, ExposesTheBaselineTheSmoothedRttTheGradientAndTheQueueingShare) {
  learn();
  feed_constant(20, 10.0);
  const LimiterState s = limit_->state();
  ASSERT_TRUE(s.rtt_noload_ms);
  EXPECT_NEAR(*s.rtt_noload_ms, 10.0, 1.0);
  ASSERT_TRUE(s.rtt_smoothed_ms);
  ASSERT_TRUE(s.gradient);
  EXPECT_LE(*s.gradient, 1.0);
  ASSERT_TRUE(s.queueing);
  EXPECT_LE(*s.queueing, 0.6);
  limit_->name_method(kGet, "/pkg.Svc/Get");
  ASSERT_EQ(limit_->baselines().size(), 1u);
  EXPECT_EQ(limit_->baselines()[0].method, "/pkg.Svc/Get");
}

TEST_F(VegasLimitTest, FixedQueueAllowanceReplacesSqrtOfLimit) {
  make([](VegasLimit::Options& o) { o.queue_allowance = 10.0; });
  learn();
  feed(
      20, [](int i) { return 9.0 + (i % 3); }, 1, true);
  EXPECT_GE(limit_->limit(), 21u);  // + 0.2 x 10 per decision
}

TEST_F(VegasLimitTest, NeverLeavesMinAndMaxWhateverTheSamples) {
  make([](VegasLimit::Options& o) {
    o.initial_limit = 5;
    o.min_limit = 3;
    o.max_limit = 7;
  });
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> rtt(1, 500);
  std::uniform_int_distribution<uint32_t> conc(1, 20);
  for (int i = 0; i < 20000; ++i) {
    now_ += 5ms;
    if (i % 3 == 0) limit_->on_demand_pressure(now_);
    if (i % 97 == 0) limit_->on_drop(now_, ms(rtt(rng)), kGet);
    const uint32_t c = conc(rng);
    limit_->on_sample(now_, LatencySample{kGet, ms(rtt(rng)), c, c});
    ASSERT_GE(limit_->limit(), 3u);
    ASSERT_LE(limit_->limit(), 7u);
  }
}

TEST_F(VegasLimitTest, GrowsBackQuicklyAfterAStallEnds) {
  // 2 ms service with demand; then a stall at 850 ms that collapses the limit; then 2 ms again.
  feed(
      100, [](int i) { return 1.9 + 0.1 * (i % 3); }, 2, true);
  for (int i = 0; i < 40 && limit_->limit() > 1; ++i) {
    // What a cut admits answers 850 ms later: one decrease per flight.
    now_ += 850ms;
    feed(
        10, [](int) { return 850.0; }, limit_->limit(), false, kGet, 1ms);
  }
  ASSERT_EQ(limit_->limit(), 1u);
  int waited = 0;
  while (limit_->limit() < 4 && waited < 200) {
    feed(
        1, [](int) { return 2.0; }, 1, true, kGet, 50ms);
    ++waited;
  }
  // Quiet decisions need no min_samples: growth keeps a pace of one decision per 50 ms.
  EXPECT_LE(waited, 40) << "samples (50 ms apart) before the limit grew back to 4";
}

TEST_F(VegasLimitTest, AQueueOfLessThanHalfACallIsNotCut) {
  // 200 calls/s at 2 calls in flight, every call 1.25x its no-load time (2.5 ms over it: beyond
  // tolerance and delay_tolerance): at that concurrency the queue it implies is 2 x 0.2 = 0.4 of
  // a call, what CPU taken by a neighbour gives an idle service. It was cut 20 -> 1.
  learn();
  feed(
      200, [](int) { return 12.5; }, 2, false, kGet, 5ms);
  EXPECT_EQ(limit_->limit(), 20u) << limit_->last_reason();
  EXPECT_NE(limit_->describe_last_decision().find("hold: a queue of less than half a call"),
            std::string::npos)
      << limit_->describe_last_decision();
  // The same slowdown at 8 calls in flight is a queue of 1.6 calls: cut.
  feed(
      100, [](int) { return 12.5; }, 8, false, kGet, 5ms);
  EXPECT_LT(limit_->limit(), 20u) << limit_->last_reason();
}

}  // namespace
}  // namespace sluice
