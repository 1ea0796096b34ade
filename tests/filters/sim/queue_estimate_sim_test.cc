// The queue estimator (QueueEstimator, run by every adaptive filter's AdmissionController)
// against the truth of the simulated upstream, on the shapes issue 32 found the old signal wrong
// on. The limit is pinned (min_limit = max_limit) so that what is measured is the estimator
// alone: every call reaches the upstream as it would without a limiter. Per seed, never pooled.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "tests/filters/sim/sim_policies.h"
#include "tests/filters/sim/sim_run.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

FilterConfig pinned(uint32_t limit) {
  RttGradientConfig g;
  g.initial_limit = g.min_limit = g.max_limit = limit;
  return sim::rtt_gradient(g);
}

struct Means {
  double queue = 0;     // estimated
  double service = 0;   // estimated
  double truth = 0;     // requests waiting in the upstream's queue
  size_t readings = 0;  // samples with a reading
};

Means means(const SimRun& r, Duration from, Duration to) {
  Means m;
  size_t n = 0;
  for (const SimSample& s : r.samples()) {
    if (s.at < from || s.at >= to) continue;
    ++n;
    m.truth += static_cast<double>(s.upstream_queued);
    if (!s.queue_calls) continue;
    ++m.readings;
    m.queue += *s.queue_calls;
    m.service += s.service_calls.value_or(0);
  }
  if (m.readings > 0) {
    m.queue /= static_cast<double>(m.readings);
    m.service /= static_cast<double>(m.readings);
  }
  if (n > 0) m.truth /= static_cast<double>(n);
  return m;
}

// Finding 4: a bimodal service at an upstream with no queue read as a standing one (the old
// signal: shift +0.27, the limit stuck at 80 with ~150 waiting). Little's law over whole cohorts
// reads no queue: within 3% of the calls in flight.
TEST(QueueEstimateSimTest, ABimodalServiceWithNoQueueReadsNone) {
  for (double fast : {0.2, 0.9}) {
    for (double rate : {5000.0, 200.0}) {
      for (uint32_t seed = 1; seed <= 3; ++seed) {
        SimConfig c;
        c.policy = "pinned, bimodal";
        c.filters = {pinned(100000)};
        c.upstream_cores = 1e9;
        c.schedule = ServiceSchedule({{2ms, 20s}});
        c.methods = {SimMethod{"/pkg.Svc/Get", sim_bimodal(fast, 2ms, 40ms)}};
        c.arrivals_per_second = rate;
        c.poisson = true;
        c.seed = seed;
        c.sample_every = 50ms;
        SimRun r(c);
        r.run();
        const Means m = means(r, 5s, 20s);
        const double cost = fast * 2 + (1 - fast) * 40;
        const double in_flight = rate * cost / 1000;
        std::printf("bimodal %.0f%% at %.0f/s seed %u: queue %.2f service %.2f (%.1f in flight)\n",
                    100 * fast, rate, seed, m.queue, m.service, in_flight);
        ASSERT_GT(m.readings, 100u);
        // What is left is the baseline's own sampling error: 3 standard errors of the mean of
        // NoloadBaselines::kMaxClean answers of this mixture, times the rate (5.3 calls at 5000/s
        // for the 90/10 mix, whose 40 ms tail makes that mean uncertain by 6% per error).
        const double sd = std::sqrt(fast * (1 - fast)) * 38;
        const double baseline_error =
            3 * rate / 1000 * sd / std::sqrt(static_cast<double>(NoloadBaselines::kMaxClean));
        EXPECT_LT(std::abs(m.queue), 0.01 * in_flight + baseline_error)
            << fast << " at " << rate << " seed " << seed;
        EXPECT_NEAR(m.service, in_flight, 0.1 * in_flight)
            << fast << " at " << rate << " seed " << seed;
      }
    }
  }
}

// Finding 3: one method whose calls cost 2 or 40 ms by their argument, its mix going from 90/10
// to 50/50 at an upstream with capacity to spare (64 workers, at most ~4 busy). The mix shift
// raises the method's mean cost. The baseline follows as clean answers come (calls admitted alone,
// cohorts that show no queue) and is rebuilt when half of 16 or 32 recent ones are a standard
// deviation slower (NoloadBaselines: a change of speed); 10-20 s after the shift the estimate
// reads 0.08-0.37 of a call waiting (the rebuild fired in seed 1 only): under half a call, below
// the one call a cut needs, and without the slope of a queue.
TEST(QueueEstimateSimTest, AShiftInOneMethodsArgumentMixIsNoQueueForLong) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    SimConfig c;
    c.policy = "pinned, argument mix";
    c.filters = {pinned(100000)};
    c.upstream_workers = 64;
    c.schedule = ServiceSchedule({{10ms, 20s}, {10ms, 20s}});
    SimMethod method{"/pkg.Svc/Query", nullptr};
    method.service_by_phase = {sim_bimodal(0.9, 2ms, 40ms), sim_bimodal(0.5, 2ms, 40ms)};
    c.methods = {method};
    c.arrivals_per_second = 100;
    c.poisson = true;
    c.seed = seed;
    SimRun r(c);
    r.run();
    const Means before = means(r, 5s, 20s);
    const Means after = means(r, 30s, 40s);
    std::printf("argument mix seed %u: queue %.2f before, %.2f after (service %.2f, truth %.2f)\n",
                seed, before.queue, after.queue, after.service, after.truth);
    EXPECT_LT(std::abs(before.queue), 0.2) << "seed " << seed;
    EXPECT_LT(std::abs(after.queue), 0.5) << "seed " << seed;
  }
}

// A real queue, fluctuating: Poisson arrivals at 90% of two 10 ms workers, nothing held back.
// The estimate's mean follows the mean number waiting in the upstream's queue, 1-5% short: while a
// baseline is young every call of a cohort without a detectable queue trains it, after that only
// those admitted with no more in flight than the upstream served (S reads 7-12% high, from the
// young baseline's calls that waited a little).
// N = Q + S, which no baseline enters, is right.
TEST(QueueEstimateSimTest, AFluctuatingQueueReadsAsItsMeanLength) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    SimConfig c;
    c.policy = "pinned, M/D/2 at 90%";
    c.filters = {pinned(100000)};
    c.upstream_workers = 2;
    c.schedule = ServiceSchedule({{10ms, 60s}});
    c.arrivals_per_second = 180;
    c.poisson = true;
    c.service_jitter = 0.05;
    c.seed = seed;
    SimRun r(c);
    r.run();
    const Means m = means(r, 10s, 60s);
    std::printf("M/D/2 at 90%% seed %u: queue %.2f (truth %.2f), service %.2f (truth 1.8)\n", seed,
                m.queue, m.truth, m.service);
    EXPECT_NEAR(m.queue, m.truth, 0.15 * m.truth) << "seed " << seed;
    EXPECT_NEAR(m.service, 1.8, 0.2 * 1.8) << "seed " << seed;
    EXPECT_NEAR(m.queue + m.service, m.truth + 1.8, 0.05 * (m.truth + 1.8)) << "seed " << seed;
  }
}

// Contention that grows with throughput (finding 2: a 2 ms service with no concurrency limit at
// 100k calls/s): every call slowed alike reads as the share of the service it adds, not as
// hundreds of calls waiting.
TEST(QueueEstimateSimTest, ContentionAtAHighRateReadsAsItsShareOfTheService) {
  for (uint32_t seed = 1; seed <= 2; ++seed) {
    SimConfig c;
    c.policy = "pinned, 100k/s";
    c.filters = {pinned(100000)};
    c.upstream_cores = 1e9;
    c.schedule = ServiceSchedule({{2ms, 4s}});
    c.methods = {SimMethod{"/pkg.Svc/Get", sim_lognormal(2ms, 0.2)}};
    c.load_ambient = [](double starts_per_s) { return 1 + 0.15 * starts_per_s / 100000; };
    c.arrivals_per_second = 100000;
    c.poisson = true;
    c.seed = seed;
    c.sample_every = 50ms;
    SimRun r(c);
    r.run();
    const Means m = means(r, 1s, 4s);
    std::printf("100k/s seed %u: queue %.2f service %.2f\n", seed, m.queue, m.service);
    EXPECT_LT(m.queue, 0.15 * m.service) << "seed " << seed;
  }
}

}  // namespace
}  // namespace sluice
