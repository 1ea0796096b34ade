// The acceptance scorecard of issue 32: an adaptive limiter against the traffic it was not tuned
// on, through the real filter chain on fake time. By default the controller issue 32 builds on the
// queue estimator (QueueLimit, `queue_limit` in the simulation); SIM_ALGO=rtt_gradient runs
// today's rtt_gradient. Every acceptance figure is checked per seed, never
// pooled. Not registered with ctest: neither algorithm meets all of it yet (rtt_gradient 2 of its 8
// tests, queue_limit 6; see the notes for the figures), and a suite that is red by design
// would hide every other regression. Run it by hand while working on the limiter:
//   ninja -C build adaptive_limit_scorecard && build/tests/filters/adaptive_limit_scorecard
// Once the algorithm meets it, it moves into filters_sim_test. The shapes: onsets (a slower
// service with the limit idle above it), a fast service at a very high rate with capacity to
// spare, open and closed loop, bimodal services, one method whose cost shifts with its
// arguments, an idle service for 240 simulated minutes, a cold start into an overload, and a stall.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "filters/rtt_gradient/rtt_gradient.h"
#include "tests/filters/sim/sim_policies.h"
#include "tests/filters/sim/sim_report.h"
#include "tests/filters/sim/sim_run.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

// The algorithm under test: issue 32's controller on the queue estimator (queue_limit), or with
// SIM_ALGO=rtt_gradient today's rtt_gradient, for comparison.
bool old_algorithm() {
  const char* a = std::getenv("SIM_ALGO");
  return a != nullptr && std::string(a) == "rtt_gradient";
}

FilterConfig adaptive(QueueOrder order = QueueOrder::Fifo) {
  if (old_algorithm()) {
    RttGradientConfig g;
    g.queue_order = order;
    return sim::rtt_gradient(g);
  }
  sim::QueueLimitConfig q;
  q.queue_order = order;
  return sim::queue_limit(q);
}

FilterConfig fixed(uint32_t limit, QueueOrder order = QueueOrder::Fifo) {
  FixedSemaphoreConfig c;
  c.max_concurrency = limit;
  c.queue_order = order;
  return FilterConfig{"fixed_semaphore", "fixed_semaphore", c};
}

double share(size_t part, size_t whole) {
  return whole == 0 ? 0 : static_cast<double>(part) / static_cast<double>(whole);
}

uint64_t cuts(SimRun& r) {
  for (const LimiterSnapshot& s : r.chain().snapshots()) {
    if (s.type == "rtt_gradient" || s.type == "queue_limit") return s.queue_cuts;
  }
  return 0;
}

// ---- Onsets: the service slows down while the limit is idle above the load ----

struct Onset {
  std::string name;
  uint32_t workers;
  Duration before;
  Duration during;
  double rate;
};

std::vector<Onset> onsets() {
  return {{"1 worker 10 -> 40 ms at 80/s", 1, 10ms, 40ms, 80},
          {"1 worker 20 -> 100 ms at 25/s", 1, 20ms, 100ms, 25},
          {"2 workers 10 -> 40 ms at 80/s", 2, 10ms, 40ms, 80}};
}

SimConfig onset_run(const Onset& o, FilterConfig limiter, uint32_t seed, std::string policy) {
  SimConfig c;
  c.policy = policy + ", " + o.name + ", seed " + std::to_string(seed);
  c.filters = {sim::queue_wait_budget(100ms), std::move(limiter)};
  c.upstream_workers = o.workers;
  c.schedule = ServiceSchedule({{o.before, 12s}, {o.during, 12s}, {o.before, 12s}});
  c.arrivals_per_second = o.rate;
  c.poisson = seed > 1;  // seed 1: the bench's fixed gap
  c.service_jitter = 0.05;
  c.seed = seed;
  return c;
}

TEST(AdaptiveLimitSimTest, AnOnsetLetsAtMostThreeCallsBeyondCapacityIntoTheUpstream) {
  for (const Onset& o : onsets()) {
    for (QueueOrder order : {QueueOrder::Fifo, QueueOrder::AdaptiveLifo}) {
      const char* order_name = order == QueueOrder::Fifo ? "fifo" : "adaptive_lifo";
      for (uint32_t seed = 1; seed <= 4; ++seed) {
        SimRun a(onset_run(o, adaptive(order), seed, std::string("rtt_gradient ") + order_name));
        a.run();
        SimRun f(onset_run(o, fixed(o.workers, order), seed, "fixed"));
        f.run();
        const uint32_t entered = a.max_in_upstream(12s, 13s);
        // Calls admitted in the onset's first second: the worst RTT among them.
        double worst_rtt_ms = 0;
        for (const SimRecord& rec : a.records()) {
          const Duration admitted = rec.arrival + rec.queue_wait;
          if (rec.admitted && rec.rtt && admitted >= 12s && admitted < 13s) {
            worst_rtt_ms = std::max(worst_rtt_ms, to_ms(*rec.rtt));
          }
        }
        const SimPhase slow = a.phase(12s, 24s);
        const SimPhase slow_fixed = f.phase(12s, 24s);
        const SimPhase after = a.phase(25s, 36s);
        std::printf(
            "%-32s %-13s seed %u: in upstream %u (cap %u), worst RTT %.0f ms, slowdown p95 %.1f "
            "ms vs fixed %.1f, goodput %.1f vs %.1f/s, after: shed %zu, cuts %llu\n",
            o.name.c_str(), order_name, seed, entered, o.workers, worst_rtt_ms, slow.e2e_p95_ms,
            slow_fixed.e2e_p95_ms, slow.goodput_per_s, slow_fixed.goodput_per_s, after.shed,
            static_cast<unsigned long long>(cuts(a)));
        const std::string where = o.name + " " + order_name + " seed " + std::to_string(seed);
        EXPECT_LE(entered, o.workers + 3) << where;
        EXPECT_LE(worst_rtt_ms, 3 * to_ms(o.during)) << where;
        EXPECT_LE(slow.e2e_p95_ms, 1.1 * slow_fixed.e2e_p95_ms) << where;
        EXPECT_GE(slow.goodput_per_s, 0.95 * slow_fixed.goodput_per_s) << where;
        EXPECT_EQ(after.shed, 0u) << where;
      }
    }
  }
}

// ---- A fast service at a very high rate with capacity to spare ----

// 2 ms calls into an upstream that starts every call at once (a goroutine per request) on a CPU
// that gets slower as the load grows (the load generator, sluice and the service on 2 cores).
SimConfig high_rate(std::vector<FilterConfig> filters, std::string policy, double rate,
                    uint32_t seed) {
  SimConfig c;
  c.policy = std::move(policy);
  c.filters = std::move(filters);
  c.upstream_cores = 1e9;  // no CPU limit of its own: only the contention below
  c.schedule = ServiceSchedule({{2ms, 4s}});
  c.methods = {SimMethod{"/pkg.Svc/Get", sim_lognormal(2ms, 0.2)}};
  c.load_ambient = [](double starts_per_s) { return 1 + 0.15 * starts_per_s / 100000; };
  c.arrivals_per_second = rate;
  c.poisson = true;
  c.seed = seed;
  c.sample_every = 50ms;
  return c;
}

TEST(AdaptiveLimitSimTest, AHighRateWithCapacityToSpareIsServedWhole) {
  for (uint32_t seed = 1; seed <= 2; ++seed) {
    SimRun r(
        high_rate({sim::queue_wait_budget(8ms), adaptive()}, "rtt_gradient, 100k/s", 100000, seed));
    r.run();
    const SimPhase all = r.phase(0s, 4s);
    std::printf("100k/s seed %u: served %zu of %zu, shed %zu, limit %u-%u, cuts %llu\n", seed,
                all.ok, all.arrived, all.shed, r.min_limit(1s, 4s), r.max_limit(1s, 4s),
                static_cast<unsigned long long>(cuts(r)));
    EXPECT_GE(share(all.ok, all.arrived), 0.99) << "seed " << seed;
    EXPECT_LE(share(all.shed, all.arrived), 0.001) << "seed " << seed;
  }
}

// Closed loop: `clients` callers each with one call outstanding, against an upstream whose CPU
// (2 cores, each call 1 ms of it in 2 ms) saturates.
SimConfig closed_loop(std::vector<FilterConfig> filters, std::string policy, uint32_t clients,
                      uint32_t seed) {
  SimConfig c;
  c.policy = std::move(policy);
  c.filters = std::move(filters);
  c.upstream_cores = 2;
  c.schedule = ServiceSchedule({{1ms, 4s}});
  c.methods = {SimMethod{"/pkg.Svc/Get", sim_lognormal(1ms, 0.3)}};
  c.closed_loop_clients = clients;
  c.seed = seed;
  c.sample_every = 50ms;
  return c;
}

TEST(AdaptiveLimitSimTest, ClosedLoopSaturationKeepsTheThroughputOfNoFilter) {
  for (uint32_t clients : {16u, 256u}) {
    for (uint32_t seed = 1; seed <= 2; ++seed) {
      SimRun none(closed_loop({}, "no filter", clients, seed));
      none.run();
      SimRun r(
          closed_loop({sim::queue_wait_budget(50ms), adaptive()}, "rtt_gradient", clients, seed));
      r.run();
      const double base = none.phase(1s, 4s).goodput_per_s;
      const SimPhase p = r.phase(1s, 4s);
      std::printf(
          "closed loop %u clients seed %u: %.0f/s vs no filter %.0f/s (%.3f), shed %zu, "
          "limit %u-%u, rtt p99 %.1f vs %.1f ms\n",
          clients, seed, p.goodput_per_s, base, p.goodput_per_s / base, p.shed, r.min_limit(1s, 4s),
          r.max_limit(1s, 4s), p.rtt_p99_ms, none.phase(1s, 4s).rtt_p99_ms);
      EXPECT_GE(p.goodput_per_s, 0.95 * base) << clients << " clients, seed " << seed;
    }
  }
}

// ---- Capacity to spare with variance: nothing may be shed ----

SimConfig bimodal(double fast_share, double rate, uint32_t seed) {
  SimConfig c;
  c.policy = "bimodal";
  c.filters = {sim::queue_wait_budget(50ms), adaptive()};
  c.upstream_cores = 1e9;
  c.schedule = ServiceSchedule({{2ms, 20s}});
  c.methods = {SimMethod{"/pkg.Svc/Get", sim_bimodal(fast_share, 2ms, 40ms)}};
  c.arrivals_per_second = rate;
  c.poisson = true;
  c.seed = seed;
  c.sample_every = 50ms;
  return c;
}

TEST(AdaptiveLimitSimTest, BimodalServicesWithCapacityToSpareShedNothing) {
  struct Mix {
    double fast_share;
    double rate;
  };
  for (Mix m : {Mix{0.2, 5000}, Mix{0.9, 5000}, Mix{0.2, 200}, Mix{0.9, 200}}) {
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      const SimConfig c = bimodal(m.fast_share, m.rate, seed);
      SimRun r(c);
      r.run();
      const SimPhase all = r.phase(0s, 20s);
      std::printf(
          "bimodal %.0f%% 2 ms / 40 ms at %.0f/s seed %u: shed %zu of %zu, limit %u-%u, "
          "cuts %llu\n",
          100 * m.fast_share, m.rate, seed, all.shed, all.arrived, r.min_limit(2s, 20s),
          r.max_limit(2s, 20s), static_cast<unsigned long long>(cuts(r)));
      EXPECT_EQ(all.shed, 0u) << m.fast_share << " at " << m.rate << ", seed " << seed;
    }
  }
}

SimConfig argument_mix(uint32_t seed) {
  SimConfig c;
  c.policy = "one method 2 ms / 40 ms by argument, 90/10 -> 50/50, then slow";
  c.filters = {sim::queue_wait_budget(50ms), adaptive()};
  c.upstream_workers = 64;
  c.schedule = ServiceSchedule({{10ms, 20s}, {10ms, 20s}, {10ms, 20s}});
  SimMethod m{"/pkg.Svc/Query", nullptr};
  m.service_by_phase = {sim_bimodal(0.9, 2ms, 40ms), sim_bimodal(0.5, 2ms, 40ms),
                        sim_uniform(70ms, 130ms)};
  c.methods = {m};
  c.arrivals_per_second = 100;
  c.poisson = true;
  c.seed = seed;
  return c;
}

TEST(AdaptiveLimitSimTest, OneMethodWhoseCostShiftsWithItsArgumentsShedsNothing) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    const SimConfig c = argument_mix(seed);
    SimRun r(c);
    r.run();
    for (Duration from : {0s, 20s, 40s}) {
      const SimPhase p = r.phase(from, from + 20s);
      std::printf(
          "argument mix seed %u from %.0f s: shed %zu of %zu, fast p95 %.1f ms, cuts %llu\n", seed,
          to_ms(from) / 1000, p.shed, p.arrived, p.e2e_p95_ms,
          static_cast<unsigned long long>(cuts(r)));
      EXPECT_EQ(p.shed, 0u) << "seed " << seed << " from " << to_ms(from) << " ms";
    }
  }
}

// ---- An idle service: at most one false cut in 240 simulated minutes ----

SimConfig idle(SimServiceTime service, uint32_t seed) {
  SimConfig c;
  c.policy = "idle";
  c.filters = {sim::queue_wait_budget(50ms), adaptive()};
  c.upstream_workers = 64;
  c.schedule = ServiceSchedule({{10ms, 60s}});
  c.methods = {SimMethod{"/pkg.Svc/Get", std::move(service)}};
  c.arrivals_per_second = 20;
  c.poisson = true;
  c.seed = seed;
  c.sample_every = 100ms;
  return c;
}

TEST(AdaptiveLimitSimTest, AnIdleServiceIsCutAtMostOnceIn240Minutes) {
  const std::vector<std::pair<std::string, SimServiceTime>> shapes = {
      {"uniform 70-130ms", sim_uniform(70ms, 130ms)},
      {"lognormal 40ms s=0.5", sim_lognormal(40ms, 0.5)},
      {"lognormal 40ms s=0.8", sim_lognormal(40ms, 0.8)},
      {"bimodal 10% 5ms / 90% 50ms", sim_bimodal(0.1, 5ms, 50ms)},
      {"bimodal 50% 5ms / 50% 50ms", sim_bimodal(0.5, 5ms, 50ms)},
      {"bimodal 90% 5ms / 10% 50ms", sim_bimodal(0.9, 5ms, 50ms)}};
  uint64_t total_cuts = 0;
  size_t shed = 0;
  for (const auto& [name, service] : shapes) {
    uint64_t shape_cuts = 0;
    for (uint32_t seed = 1; seed <= 40; ++seed) {
      const SimConfig c = idle(service, seed);
      SimRun r(c);
      r.run();
      shape_cuts += cuts(r);
      shed += r.phase(0s, 60s).shed;
    }
    std::printf("idle %s: %llu cuts in 40 minutes\n", name.c_str(),
                static_cast<unsigned long long>(shape_cuts));
    total_cuts += shape_cuts;
  }
  EXPECT_LE(total_cuts, 1u);
  EXPECT_EQ(shed, 0u);
}

// ---- A cold start into an overload learns the real baseline ----

SimConfig cold_start(uint32_t seed) {
  SimConfig c;
  c.policy = "cold start at 2x capacity, 4 workers 10 ms";
  c.filters = {sim::queue_wait_budget(50ms), adaptive()};
  c.upstream_workers = 4;
  c.schedule = ServiceSchedule({{10ms, 20s}});
  c.arrivals_per_second = 800;
  c.poisson = true;
  c.service_jitter = 0.1;
  c.seed = seed;
  return c;
}

TEST(AdaptiveLimitSimTest, AColdStartIntoAnOverloadFindsTheNoLoadLatency) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const SimConfig c = cold_start(seed);
    SimRun r(c);
    r.run();
    const SimPhase settled = r.phase(5s, 20s);
    const double noload = r.sample_at(19s).rtt_noload_ms.value_or(0);
    std::printf(
        "cold start seed %u: rtt_noload %.1f ms, mean limit %.1f, rtt p50 %.1f, busy %.3f\n", seed,
        noload, r.mean_limit(5s, 20s), settled.rtt_p50_ms, settled.upstream_busy);
    EXPECT_LE(noload, 12.0) << "seed " << seed;
    EXPECT_LE(r.mean_limit(5s, 20s), 6.5) << "seed " << seed;
    EXPECT_GE(settled.upstream_busy, 0.95) << "seed " << seed;
  }
}

// ---- The stall of the adaptive-backpressure article ----

SimConfig stall(uint32_t seed) {
  SimConfig c;
  c.policy = "2 ms -> 850 ms for 4 s, 16 workers, 1000/s";
  c.filters = {sim::queue_wait_budget(50ms), adaptive()};
  c.upstream_workers = 16;
  c.schedule = ServiceSchedule({{2ms, 5s}, {850ms, 4s}, {2ms, 6s}});
  c.arrivals_per_second = 1000;
  c.poisson = true;
  c.seed = seed;
  return c;
}

TEST(AdaptiveLimitSimTest, AStallIsShedAtOnceAndRecoveredFrom) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const SimConfig c = stall(seed);
    SimRun r(c);
    r.run();
    Duration first_shed = Duration::max();
    for (const SimRecord& rec : r.records()) {
      if (!rec.shed_reason.empty() && rec.arrival >= 5s) {
        first_shed = std::min(first_shed, rec.arrival + rec.queue_wait - 5s);
      }
    }
    // Recovery: from the end of the stall (9 s: calls started after it take 2 ms), the first
    // 100 ms bin after which every bin is served whole.
    Duration recovered = Duration::max();
    for (Duration t = 9s; t < 15s; t += 100ms) {
      bool all_good = true;
      for (Duration u = t; u < 15s; u += 100ms) {
        const SimPhase p = r.phase(u, u + 100ms);
        if (p.shed > 0 || p.ok < p.arrived) all_good = false;
      }
      if (all_good) {
        recovered = t - 9s;
        break;
      }
    }
    const SimPhase stall = r.phase(5s, 9s);
    std::printf(
        "stall seed %u: first shed %.0f ms after it began, recovered %.0f ms after it "
        "ended, max in upstream %u, stall rtt p99 %.0f ms\n",
        seed, to_ms(first_shed), to_ms(recovered), r.max_in_upstream(5s, 9s), stall.rtt_p99_ms);
    EXPECT_LE(first_shed, 100ms) << "seed " << seed;
    EXPECT_LE(recovered, 1s) << "seed " << seed;
  }
}

// Not part of the scorecard: SIM_TRACE=onset|onset2|onset3|argmix|idle|bimodal|high|stall|cold
// runs that one shape instead (SIM_SEED, default 1) and prints the limiter's state whenever its
// limit changed (every sample with SIM_ALL) between SIM_FROM and SIM_TO (seconds); SIM_DEBUG=1
// adds the algorithm's decisions. For working on the algorithm.
int trace(const std::string& w) {
  const uint32_t seed = std::getenv("SIM_SEED") ? std::atoi(std::getenv("SIM_SEED")) : 1;
  SimConfig c;
  if (w == "onset" || w == "onset2" || w == "onset3") {
    const Onset o = onsets()[w == "onset" ? 0 : w == "onset2" ? 1 : 2];
    c = onset_run(o, adaptive(), seed, "trace");
  } else if (w == "argmix") {
    c = argument_mix(seed);
  } else if (w == "idle") {
    c = idle(sim_lognormal(40ms, 0.8), seed);
  } else if (w == "bimodal") {
    c = bimodal(0.9, 5000, seed);
  } else if (w == "high") {
    c = high_rate({sim::queue_wait_budget(8ms), adaptive()}, "trace", 100000, seed);
  } else if (w == "stall") {
    c = stall(seed);
  } else if (w == "cold") {
    c = cold_start(seed);
  } else {
    std::fprintf(stderr, "SIM_TRACE: unknown shape %s\n", w.c_str());
    return 2;
  }
  if (std::getenv("SIM_DEBUG")) spdlog::set_level(spdlog::level::debug);
  SimRun r(c);
  r.run();
  const double from = std::getenv("SIM_FROM") ? std::atof(std::getenv("SIM_FROM")) : 0;
  const double to = std::getenv("SIM_TO") ? std::atof(std::getenv("SIM_TO")) : 1e9;
  uint32_t last_limit = 0;
  for (const SimSample& s : r.samples()) {
    const double t = to_ms(s.at) / 1000;
    if (t < from || t > to) continue;
    if (s.limit == last_limit && !std::getenv("SIM_ALL")) continue;
    last_limit = s.limit;
    std::printf(
        "%8.3f limit %4u in flight %4u queued %4u  Q %6.2f S %6.2f delay %6.1f noload %.1f\n", t,
        s.limit, s.in_flight, s.queued, s.queue_calls.value_or(-1), s.service_calls.value_or(-1),
        s.queue_delay_ms.value_or(-1), s.rtt_noload_ms.value_or(-1));
  }
  std::printf("shed %zu of %zu\n", r.phase(0s, 1000s).shed, r.phase(0s, 1000s).arrived);
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  if (const char* which = std::getenv("SIM_TRACE")) return sluice::trace(which);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
