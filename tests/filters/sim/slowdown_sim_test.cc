// The limit algorithms, through the real filter chain, against a deterministic simulated upstream
// (issue 3, "Tests"): the slowdown of "gRPC under pressure" part 2 (one worker, 10 -> 40 -> 10 ms,
// 80 calls/s open loop), the same with four workers and Poisson arrivals, AIMD against its SLO,
// the [min_limit, max_limit] bounds, and RTT_noload under a lucky sample and sustained load.
// Every test prints its report (limit over time, per-phase latency, goodput, shedding).
#include <gtest/gtest.h>

#include <algorithm>

#include "filters/aimd/aimd.h"
#include "filters/rtt_gradient/rtt_gradient.h"
#include "tests/filters/sim/sim_policies.h"
#include "tests/filters/sim/sim_report.h"
#include "tests/filters/sim/sim_run.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

// The client-facing budget in front of every policy: long enough that a waiter is usually there
// when a permit frees (arrivals are 12.5 ms apart), so the upstream never idles for lack of one.
using sim::kBudget;
using sim::run;

SimConfig part2(std::string policy, FilterConfig limiter) {
  SimConfig c;
  c.policy = std::move(policy);
  c.filters = {sim::queue_wait_budget(kBudget), std::move(limiter)};
  c.upstream_workers = 1;
  c.schedule = ServiceSchedule({{10ms, 12s}, {40ms, 12s}, {10ms, 12s}});
  c.arrivals_per_second = 80;
  return c;
}

SimConfig four_workers(std::string policy, FilterConfig limiter) {
  SimConfig c = part2(std::move(policy), std::move(limiter));
  c.upstream_workers = 4;
  c.arrivals_per_second = 320;
  c.poisson = true;
  return c;
}

TEST(SlowdownSimTest, RttGradientShrinksWithinAFewHundredMsOfTheSlowdownAndGrowsBackAfter) {
  auto r = run(part2("rtt_gradient, part 2 slowdown", sim::rtt_gradient()));
  // Before: nobody used the initial limit of 20, so it was held, not inflated.
  EXPECT_EQ(r->limit_at(11900ms), 20u);
  // The slowdown starts at 12 s: 300 ms later the limit is down to what one worker can serve.
  EXPECT_LE(r->max_limit(12300ms, 24s), 2u);
  // During it (after the first second, which drains what the old limit let in), admitted
  // requests see about the service time, at worst one request ahead of them...
  const SimPhase slow = r->phase(13s, 24s);
  EXPECT_LE(slow.rtt_p50_ms, 41.0);
  EXPECT_LE(slow.rtt_p99_ms, 81.0);
  // ...while the worker is kept busy: throughput is the worker's capacity, 25/s.
  EXPECT_GE(slow.upstream_busy, 0.98);
  EXPECT_GE(slow.goodput_per_s, 24.5);
  // After it, the limit grows back and nothing is shed any more.
  EXPECT_GT(r->mean_limit(25s, 36s), 1.5 * r->mean_limit(13s, 24s));
  const SimPhase after = r->phase(25s, 36s);
  EXPECT_EQ(after.shed, 0u);
  EXPECT_LE(after.rtt_p99_ms, 21.0);
}

TEST(SlowdownSimTest, FixedLimitsKeepAStandingQueueThroughTheSlowdown) {
  // The comparison the adaptive policies must win: with the same budget in front, fixed limits
  // admit work that then waits inside the upstream.
  auto fixed8 = run(part2("fixed_semaphore 8, part 2 slowdown", sim::fixed_semaphore(8)));
  auto fixed32 = run(part2("fixed_semaphore 32, part 2 slowdown", sim::fixed_semaphore(32)));
  auto gradient = run(part2("rtt_gradient, part 2 slowdown", sim::rtt_gradient()));
  auto aimd = run(part2("aimd slo 100ms, part 2 slowdown", sim::aimd(100ms)));
  const SimPhase f8 = fixed8->phase(13s, 24s);
  const SimPhase f32 = fixed32->phase(13s, 24s);
  EXPECT_GE(f8.rtt_p50_ms, 8 * 40.0);    // 8 requests share one 40 ms worker
  EXPECT_GE(f32.rtt_p50_ms, 32 * 40.0);  // 32 do
  // Each adaptive policy once it has reacted: rtt_gradient within its first second, aimd (one
  // decision per second, each judging only requests admitted since the last) within four.
  for (auto [adaptive, settled] :
       {std::pair{gradient.get(), Duration(13s)}, std::pair{aimd.get(), Duration(16s)}}) {
    const SimPhase a = adaptive->phase(settled, 24s);
    EXPECT_LT(a.rtt_p99_ms, f8.rtt_p50_ms / 3) << adaptive->config().policy;
    EXPECT_GE(a.goodput_per_s, 0.97 * f8.goodput_per_s) << adaptive->config().policy;
  }
}

TEST(SlowdownSimTest, RttGradientWithFourWorkersKeepsThemBusyThroughTheSlowdown) {
  auto r = run(four_workers("rtt_gradient, 4 workers, poisson", sim::rtt_gradient()));
  // Never far above what four workers serve without a queue, before or during the slowdown.
  EXPECT_LE(r->max_limit(1s, 24s), 8u);
  const SimPhase slow = r->phase(13s, 24s);
  // The slower service is learnt as the new baseline (the limit is not pinned at min_limit), so
  // the four workers stay busy and admitted latency stays within two service times.
  EXPECT_GE(slow.goodput_per_s, 90.0);  // capacity: 4 workers / 40 ms = 100/s
  EXPECT_LE(slow.rtt_p99_ms, 2 * 40.0 + 15.0);
  // After it, the fast service is learnt back and nothing is shed.
  const SimPhase after = r->phase(25s, 36s);
  EXPECT_GE(after.goodput_per_s, 0.98 * 320);
  EXPECT_LE(after.shed, after.arrived / 100);
}

TEST(SlowdownSimTest, AimdKeepsP99NearItsSlo) {
  for (SimConfig c : {part2("aimd slo 100ms, part 2 slowdown", sim::aimd(100ms)),
                      four_workers("aimd slo 100ms, 4 workers, poisson", sim::aimd(100ms))}) {
    auto r = run(c);
    // Once it has reacted to the slowdown (its control period is 1 s), p99 stays under the SLO
    // and above the headroom below which it would grow.
    const SimPhase slow = r->phase(18s, 24s);
    EXPECT_LE(slow.rtt_p99_ms, 100.0) << c.policy;
    EXPECT_GE(slow.rtt_p99_ms, 0.5 * 100.0) << c.policy;
    EXPECT_GE(slow.upstream_busy, 0.95) << c.policy;
    EXPECT_LE(r->phase(25s, 36s).rtt_p99_ms, 100.0) << c.policy;
  }
}

TEST(SlowdownSimTest, NoAlgorithmEverLeavesMinAndMaxLimit) {
  RttGradientConfig g;
  g.initial_limit = 5;
  g.min_limit = 2;
  g.max_limit = 6;
  AimdConfig a;
  a.initial_limit = 5;
  a.min_limit = 2;
  a.max_limit = 6;
  // Overload (demand pushes the limit up) and a 20x slowdown (latency pushes it down).
  auto push_both_ways = [](SimConfig c) {
    c.schedule = ServiceSchedule({{10ms, 10s}, {200ms, 10s}, {10ms, 10s}});
    c.upstream_workers = 4;
    c.arrivals_per_second = 1000;
    c.poisson = true;
    return c;
  };
  for (SimConfig c : {push_both_ways(part2("rtt_gradient [2, 6]", sim::rtt_gradient(g))),
                      push_both_ways(part2("aimd [2, 6]", sim::aimd(100ms, a)))}) {
    auto r = run(c);
    for (const SimSample& s : r->samples()) {
      ASSERT_GE(s.limit, 2u) << c.policy << " at " << to_ms(s.at) << "ms";
      ASSERT_LE(s.limit, 6u) << c.policy << " at " << to_ms(s.at) << "ms";
    }
    for (const LimiterSnapshot& snap : r->chain().snapshots()) {
      for (const LimitDecision& d : snap.recent_decisions) {
        EXPECT_GE(d.new_limit, 2u) << c.policy << ": " << d.reason;
        EXPECT_LE(d.new_limit, 6u) << c.policy << ": " << d.reason;
      }
    }
    // Both ends were actually reached: the bounds were tested, not just never approached.
    EXPECT_EQ(r->min_limit(Duration::zero(), 30s), 2u) << c.policy;
    EXPECT_EQ(r->max_limit(Duration::zero(), 30s), 6u) << c.policy;
  }
}

TEST(SlowdownSimTest, RttNoloadDoesNotCollapseOnOneLuckyFastSample) {
  SimConfig c = part2("rtt_gradient, one 1 ms request at 5 s", sim::rtt_gradient());
  // The request that arrives at exactly 5 s (arrivals are 12.5 ms apart) is served in 1 ms.
  c.schedule = ServiceSchedule({{10ms, 5s}, {1ms, 1ms}, {10ms, 10s}});
  auto r = run(c);
  EXPECT_DOUBLE_EQ(r->sample_at(4900ms).rtt_noload_ms.value_or(0), 10.0);
  for (const SimSample& s : r->samples()) {
    if (s.at > 5s) {
      ASSERT_DOUBLE_EQ(s.rtt_noload_ms.value_or(0), 10.0) << to_ms(s.at) << "ms";
    }
  }
}

// rtt_gradient in front of 8 workers whose calls take `service` +-30%, `rate` calls/s (Poisson)
// for `length`.
SimConfig sustained_overload(std::string policy, Duration service, Duration length, double rate) {
  SimConfig c;
  c.policy = std::move(policy);
  c.filters = {sim::queue_wait_budget(kBudget), sim::rtt_gradient()};
  c.upstream_workers = 8;
  c.schedule = ServiceSchedule({{service, length}});
  c.arrivals_per_second = rate;
  c.poisson = true;
  c.service_jitter = 0.3;
  return c;
}

TEST(SlowdownSimTest, RttNoloadDoesNotDriftUpUnderSustainedLoad) {
  // Five minutes at 125% of capacity: 8 workers, 10 ms +-30% (so the no-load median, RTT_noload,
  // is 10 ms), 1000 calls/s. Every decision is loaded; a baseline re-measured from loaded samples
  // would creep up.
  auto r = run(sustained_overload("rtt_gradient, sustained overload", 10ms, 300s, 1000));
  // The estimate is the median of the last 256 clean samples of a +-30% service: it moves by
  // about 1.5% (one standard error) from decision to decision, never away for good.
  double sum = 0;
  size_t n = 0;
  for (const SimSample& s : r->samples()) {
    if (s.at < 10s) continue;
    ASSERT_LE(s.rtt_noload_ms.value_or(0), 10.0 * 1.08) << to_ms(s.at) << "ms";
    ASSERT_LE(s.limit, 16u) << to_ms(s.at) << "ms";  // never far above the 8 workers
    sum += s.rtt_noload_ms.value_or(0);
    ++n;
  }
  EXPECT_LE(sum / static_cast<double>(n), 10.0 * 1.02);  // and no drift on average
  const SimPhase all = r->phase(10s, 300s);
  EXPECT_GE(all.goodput_per_s, 0.97 * 800);  // capacity is still used
  EXPECT_LE(all.rtt_p99_ms, 2 * 13.0);       // and admitted work barely queues
}

TEST(SlowdownSimTest, RttNoloadOfAFastServiceDoesNotDriftUpUnderSustainedLoad) {
  // The same at 2.1 ms +-30% (8 workers serve ~3,800/s; 4,800/s offered for two minutes), where
  // delay_tolerance (1 ms, half a call) grants more queue than the ratio tolerance. A limit held
  // above the workers admits no call at a clean concurrency: the window then ages the baseline
  // down to its last few samples, the knee passes a queued level judged against it, and the
  // baseline ratchets up (2.1 -> 3.2 ms in two minutes with cuts that spared a 1 ms queue,
  // tried and not landed in stop 25). The limit must come down to the workers often enough.
  auto r = run(sustained_overload("rtt_gradient, sustained overload of a 2.1 ms service", 2100us,
                                  120s, 4800));
  for (const SimSample& s : r->samples()) {
    if (s.at < 10s) continue;
    ASSERT_LE(s.rtt_noload_ms.value_or(0), 2.1 * 1.08) << to_ms(s.at) << "ms";
    ASSERT_LE(s.limit, 16u) << to_ms(s.at) << "ms";  // at most about one call queued per worker
  }
  const SimPhase all = r->phase(10s, 120s);
  EXPECT_GE(all.goodput_per_s, 0.97 * 8 * 1000 / 2.1);  // capacity is still used
  EXPECT_LE(all.rtt_p99_ms, 2.1 * 1.3 + 2.0);           // and admitted work queues < 2 ms
}

TEST(SlowdownSimTest, RttNoloadDoesNotDriftUpUnderSustainedLoadOnANoisyMachine) {
  // The same on a machine whose CPU is shared: in bursts of 50-400 ms every call is slowed alike
  // by up to 40% (30% of the time not at all). One queued call at 8 busy workers adds ~12%, less
  // than the noise: a knee that passed such a level let it train the baseline, which then judged
  // the next level, and the limit never came back below the knee (a cut stops there): over these
  // two minutes a mean limit of 17.7 and a p50 of 5.1 ms, RTT_noload past 3.2 ms (now 10.2 and
  // 3.0 ms).
  SimConfig c = sustained_overload(
      "rtt_gradient, sustained overload of a 2.1 ms service, CPU noise", 2100us, 120s, 6000);
  c.ambient = sim_cpu_noise(120s, 1.4, 50ms, 400ms, 0.3, 11);
  auto r = run(c);
  double sum = 0;
  size_t n = 0;
  uint32_t max_limit = 0;
  for (const SimSample& s : r->samples()) {
    if (s.at < 10s) continue;
    // The noise slows a call by 1.14x on average and by 1.4x at most.
    ASSERT_LE(s.rtt_noload_ms.value_or(0), 2.1 * 1.4 * 1.08) << to_ms(s.at) << "ms";
    max_limit = std::max(max_limit, s.limit);
    sum += s.rtt_noload_ms.value_or(0);
    ++n;
  }
  EXPECT_LE(sum / static_cast<double>(n), 2.1 * 1.25);
  EXPECT_LE(max_limit, 24u);                  // at most about two calls queued per worker
  EXPECT_LE(r->mean_limit(60s, 120s), 13.0);  // and no creep
  const SimPhase all = r->phase(10s, 120s);
  EXPECT_GE(all.upstream_busy, 0.97);  // capacity is still used
}

}  // namespace
}  // namespace sluice
