// The adaptive limiters against the traffic users have (issue 13), through the real filter chain
// on fake time: variable service times at a low rate, a shifting mix of cheap and expensive
// methods, streams, and traffic classes. Every scenario with capacity to spare (nothing should be
// shed) stands next to one where capacity is exceeded (the limit must act).
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "filters/aimd/aimd.h"
#include "filters/queue_wait_budget/queue_wait_budget.h"
#include "filters/rtt_gradient/rtt_gradient.h"
#include "tests/filters/sim/sim_policies.h"
#include "tests/filters/sim/sim_report.h"
#include "tests/filters/sim/sim_run.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

using sim::kBudget;
using sim::run;

struct Policy {
  std::string name;
  std::vector<FilterConfig> filters;
};

std::vector<Policy> adaptive_policies() {
  return {{"rtt_gradient", {sim::queue_wait_budget(kBudget), sim::rtt_gradient()}},
          {"aimd 200ms", {sim::queue_wait_budget(kBudget), sim::aimd(200ms)}}};
}

struct Shape {
  std::string name;
  SimServiceTime service;
};

std::vector<Shape> variable_shapes() {
  return {{"uniform 70-130ms", sim_uniform(70ms, 130ms)},
          {"lognormal 40ms s=0.5", sim_lognormal(40ms, 0.5)},
          {"lognormal 40ms s=0.8", sim_lognormal(40ms, 0.8)},
          {"bimodal 10% 5ms / 90% 50ms", sim_bimodal(0.1, 5ms, 50ms)},
          {"bimodal 50% 5ms / 50% 50ms", sim_bimodal(0.5, 5ms, 50ms)},
          {"bimodal 90% 5ms / 10% 50ms", sim_bimodal(0.9, 5ms, 50ms)}};
}

double shed_share(const SimPhase& p) {
  return p.arrived == 0 ? 0 : static_cast<double>(p.shed) / static_cast<double>(p.arrived);
}

// ---- Variable service times at a low rate ----

// `shape` at 20 calls/s (Poisson) for `length`, 64 workers: capacity to spare.
SimConfig idle_variable_service(const Policy& policy, const Shape& shape, Duration length) {
  SimConfig c;
  c.policy = policy.name + ", " + shape.name + ", 20/s, 64 workers";
  c.filters = policy.filters;
  c.upstream_workers = 64;  // far more than 20/s needs
  c.schedule = ServiceSchedule({{10ms, length}});
  c.methods = {SimMethod{"/pkg.Svc/Get", shape.service}};
  c.arrivals_per_second = 20;
  c.poisson = true;
  return c;
}

TEST(RealTrafficSimTest, VariableServiceAtLowRateWithCapacityToSpareShedsNothing) {
  for (const Policy& policy : adaptive_policies()) {
    for (const Shape& shape : variable_shapes()) {
      const SimConfig c = idle_variable_service(policy, shape, 120s);
      auto r = run(c);
      const SimPhase all = r->phase(0s, 120s);
      EXPECT_LE(shed_share(all), 0.01) << c.policy << ": " << all.shed << " of " << all.arrived;
    }
  }
}

TEST(RealTrafficSimTest, AnIdleServiceWithAVariableLatencyIsSeldomCut) {
  // The run above is one seed. Over 40 one-minute runs of each shape, rtt_gradient's limit must
  // stay where it is in nearly all: a cut there is a false alarm of the sign test, and a Poisson
  // burst that meets the cut limit is shed. Quiet decisions skipped over by the confirmation made
  // such a cut 3x likelier (30 of 240 runs before, 9 after).
  const Policy rtt_gradient = adaptive_policies().front();
  int cut = 0;
  int runs = 0;
  size_t shed = 0;
  size_t arrived = 0;
  for (const Shape& shape : variable_shapes()) {
    int shape_cut = 0;
    for (uint32_t seed = 1; seed <= 40; ++seed) {
      SimConfig c = idle_variable_service(rtt_gradient, shape, 60s);
      c.seed = seed;
      SimRun r(c);  // no report: 240 runs
      r.run();
      const SimPhase all = r.phase(0s, 60s);
      shed += all.shed;
      arrived += all.arrived;
      shape_cut += r.min_limit(0s, 60s) < 20 ? 1 : 0;
      ++runs;
    }
    std::cout << shape.name << ": the limit cut in " << shape_cut << " of 40 runs\n";
    cut += shape_cut;
  }
  EXPECT_LE(cut, runs / 20) << "runs with a cut";  // 5%
  EXPECT_LE(static_cast<double>(shed), 0.001 * static_cast<double>(arrived));
}

TEST(RealTrafficSimTest, VariableServiceBeyondCapacityIsLimited) {
  // The same shapes where capacity is exceeded: 2 workers for 2.5x what they serve. The limit must
  // come down so that admitted calls do not wait behind a standing queue upstream.
  for (const Shape& shape : variable_shapes()) {
    SimConfig c;
    c.policy = "rtt_gradient, " + shape.name + ", 2 workers overloaded";
    c.filters = {sim::queue_wait_budget(kBudget), sim::rtt_gradient()};
    c.upstream_workers = 2;
    c.schedule = ServiceSchedule({{10ms, 60s}});
    c.methods = {SimMethod{"/pkg.Svc/Get", shape.service}};
    const double mean_ms = [&] {
      std::mt19937_64 rng(7);
      double sum = 0;
      for (int i = 0; i < 10000; ++i) sum += to_ms(shape.service(rng));
      return sum / 10000;
    }();
    c.arrivals_per_second = 2.5 * 2 * 1000.0 / mean_ms;
    c.poisson = true;
    auto r = run(c);
    const SimPhase settled = r->phase(10s, 60s);
    EXPECT_GE(settled.upstream_busy, 0.85) << c.policy;   // capacity used
    EXPECT_LE(r->mean_limit(10s, 60s), 8.0) << c.policy;  // not an unbounded queue upstream
    EXPECT_GT(settled.shed, 0u) << c.policy;              // the overload went somewhere
  }
}

// ---- Machine-wide noise at a high rate ----

// 2.1 ms calls at 8,000/s (about 17 in flight) on a machine whose CPU is shared: in bursts of
// 50-400 ms every call is slowed alike by up to 40%, whatever sluice's concurrency (what
// bench/stall_max.py met on the 2-core VM: a limit cut from 30 to 1-2 by "queueing" that cutting
// never relieved).
SimConfig noisy_machine(std::string policy, uint32_t workers, double rate) {
  SimConfig c;
  c.policy = std::move(policy);
  c.filters = {sim::queue_wait_budget(kBudget), sim::rtt_gradient()};
  c.upstream_workers = workers;
  c.schedule = ServiceSchedule({{2100us, 20s}});
  c.methods = {SimMethod{"/pkg.Svc/Get", sim_lognormal(2100us, 0.15)}};
  c.ambient = sim_cpu_noise(20s, 1.4, 50ms, 400ms, 0.3, 11);
  c.arrivals_per_second = rate;
  c.poisson = true;
  return c;
}

TEST(RealTrafficSimTest, MachineWideNoiseWithCapacityToSpareShedsNothing) {
  auto r = run(
      noisy_machine("rtt_gradient, 2.1ms at 8000/s, 256 workers, CPU noise up to 1.4x", 256, 8000));
  const SimPhase all = r->phase(0s, 20s);
  EXPECT_LE(shed_share(all), 0.01) << all.shed << " of " << all.arrived;
  // The limit stays above the concurrency the load needs (~17 at 2.1 ms, ~24 at 1.4x).
  EXPECT_GE(r->min_limit(5s, 20s), 17u);
}

TEST(RealTrafficSimTest, MachineWideNoiseBeyondCapacityIsStillLimited) {
  // The same noise where capacity is exceeded: 8 workers serve ~3,800/s at 2.1 ms, 6,000/s
  // offered. Tolerating the noise must not hide the queue.
  auto r =
      run(noisy_machine("rtt_gradient, 2.1ms at 6000/s, 8 workers, CPU noise up to 1.4x", 8, 6000));
  const SimPhase settled = r->phase(5s, 20s);
  EXPECT_GE(settled.upstream_busy, 0.85);
  EXPECT_LE(r->mean_limit(5s, 20s), 16.0);  // at most about one call queued per worker
  EXPECT_GT(settled.shed, 0u);
}

// The rig's contention grows with the work on it: at 8,700/s the load generator, sluice and the
// upstream share two cores and every call is ~1.2x slower than alone, more in bursts (Poisson
// arrivals) and in the neighbours' bursts. Admitting less relieves it a little, so a cut "works"
// (bench/stall_max.py: cut after cut, 55 -> 41 -> 26 -> 21 -> 17 -> 11, each decision 1.2x
// slower, while sluice without filters served that rate whole).
SimConfig loaded_machine(std::string policy, uint32_t workers, double rate) {
  SimConfig c = noisy_machine(std::move(policy), workers, rate);
  c.ambient = sim_cpu_noise(20s, 1.25, 20ms, 200ms, 0.5, 12);
  c.load_ambient = [](double starts_per_s) {
    const double x = starts_per_s / 8700;
    return 1 + 0.2 * x * x;
  };
  return c;
}

TEST(RealTrafficSimTest, ContentionThatGrowsWithLoadWithCapacityToSpareShedsNothing) {
  auto r = run(loaded_machine(
      "rtt_gradient, 2.1ms at 8700/s, 256 workers, contention 1.2x at 8700/s + noise", 256, 8700));
  const SimPhase all = r->phase(0s, 20s);
  EXPECT_LE(shed_share(all), 0.01) << all.shed << " of " << all.arrived;
  EXPECT_GE(r->min_limit(5s, 20s), 19u);  // ~19 in flight at 2.1 ms, ~23 at 1.2x
  // Nor do calls wait for long: contention of 0.4-1 ms a call is within delay_tolerance (cut for
  // as a queue, it gave a queue-wait p99 of 37 ms of the 50 ms budget).
  EXPECT_LE(all.queue_wait_p99_ms, 20.0);
}

TEST(RealTrafficSimTest, ContentionWithCpuHiccupsWithCapacityToSpareShedsNothing) {
  SimConfig c = loaded_machine(
      "rtt_gradient, 2.1ms at 8700/s, 256 workers, contention 1.2x + noise + 4 ms hiccups", 256,
      8700);
  const SimAmbient noise = c.ambient;
  const SimAmbient hiccups = sim_hiccups(20s, 100ms, 600ms, 4ms, 2100us, 13);
  c.ambient = [noise, hiccups](Duration since) { return noise(since) * hiccups(since); };
  auto r = run(c);
  const SimPhase all = r->phase(0s, 20s);
  EXPECT_LE(shed_share(all), 0.01) << all.shed << " of " << all.arrived;
  EXPECT_LE(all.queue_wait_p99_ms, 20.0);  // 39 ms without delay_tolerance
}

TEST(RealTrafficSimTest, ContentionThatGrowsWithLoadBeyondCapacityIsStillLimited) {
  auto r = run(loaded_machine(
      "rtt_gradient, 2.1ms at 6000/s, 8 workers, contention that grows with load", 8, 6000));
  const SimPhase settled = r->phase(5s, 20s);
  EXPECT_GE(settled.upstream_busy, 0.85);
  EXPECT_LE(r->mean_limit(5s, 20s), 16.0);
  EXPECT_GT(settled.shed, 0u);
}

// ---- Methods of different cost ----

SimConfig method_mix(std::string policy, std::vector<FilterConfig> filters, uint32_t workers,
                     double rate) {
  SimConfig c;
  c.policy = std::move(policy);
  c.filters = std::move(filters);
  c.upstream_workers = workers;
  c.schedule = ServiceSchedule({{10ms, 20s}, {10ms, 20s}, {10ms, 20s}});
  c.methods = {SimMethod{"/pkg.Svc/Get", sim_lognormal(2ms, 0.3), {0.9, 0.5, 0.1}},
               SimMethod{"/pkg.Reports/Generate", sim_lognormal(40ms, 0.3), {0.1, 0.5, 0.9}}};
  c.arrivals_per_second = rate;
  c.poisson = true;
  return c;
}

TEST(RealTrafficSimTest, MethodMixShiftWithCapacityToSpareShedsNothing) {
  for (const Policy& policy : adaptive_policies()) {
    auto r = run(method_mix(policy.name + ", 2ms/40ms mix 90/10 -> 50/50 -> 10/90, 100/s",
                            policy.filters, 64, 100));
    for (Duration from : {0s, 20s, 40s}) {
      const SimPhase p = r->phase(from, from + 20s);
      EXPECT_LE(shed_share(p), 0.01)
          << policy.name << " from " << to_ms(from) << "ms: " << p.shed << " of " << p.arrived;
    }
  }
}

TEST(RealTrafficSimTest, MethodMixBeyondCapacityIsLimitedInEveryPhase) {
  // 4 workers; the last phase needs 100/s x (0.1 x 2 + 0.9 x 40) ms = 3.6 workers at 100/s, so
  // 150/s exceeds capacity there (and only there, mostly).
  auto r = run(method_mix("rtt_gradient, mix shift, 4 workers, 150/s",
                          {sim::queue_wait_budget(kBudget), sim::rtt_gradient()}, 4, 150));
  const SimPhase last = r->phase(45s, 60s);
  EXPECT_GE(last.upstream_busy, 0.9);
  EXPECT_GT(last.shed, 0u);
  EXPECT_LE(last.rtt_p99_ms, 4 * 45.0);  // at most a few calls ahead of an admitted one
  // The cheap-method phase had capacity to spare: nothing shed there.
  EXPECT_LE(shed_share(r->phase(0s, 20s)), 0.01);
}

// ---- Streams ----

SimConfig streams(std::string policy, RttGradientConfig g) {
  SimConfig c;
  c.policy = std::move(policy);
  c.filters = {sim::queue_wait_budget(kBudget), sim::rtt_gradient(g)};
  c.upstream_workers = 64;
  c.schedule = ServiceSchedule({{10ms, 60s}});
  c.methods = {SimMethod{"/pkg.Svc/Get", sim_lognormal(10ms, 0.3), {0.8}},
               SimMethod{"/pkg.Svc/Watch", sim_lognormal(20ms, 0.3), {0.2}, 2s}};
  c.arrivals_per_second = 50;
  c.poisson = true;
  return c;
}

TEST(RealTrafficSimTest, StreamsAreSampledAtTheirFirstMessageAndDoNotDragTheLimit) {
  // Server streams that answer in ~20 ms and stay open for 2 s, beside 10 ms unary calls: the
  // samples are the first-message times, not the stream lifetimes. Configured to count until
  // their first message, the streams hold no permit while they idle, and nothing is shed.
  RttGradientConfig g;
  g.streams = {PermitRule{"/pkg.Svc/Watch", PermitHold::FirstMessage}};
  auto r =
      run(streams("rtt_gradient, unary 10ms + streams (first message 20ms, open 2s), "
                  "streams count until their first message",
                  g));
  const SimPhase all = r->phase(0s, 60s);
  EXPECT_LE(shed_share(all), 0.01) << all.shed << " of " << all.arrived;
  const SimPhase streams = r->phase(0s, 60s, 1);
  EXPECT_LE(streams.rtt_p50_ms, 25.0);  // the first message, not the 2 s life
  bool baseline_seen = false;
  for (const LimiterSnapshot& snap : r->chain().snapshots()) {
    for (const MethodBaseline& b : snap.baselines) {
      if (b.method == "/pkg.Svc/Watch") {
        baseline_seen = true;
        EXPECT_LE(b.rtt_noload_ms, 25.0);
      }
    }
  }
  EXPECT_TRUE(baseline_seen);
}

TEST(RealTrafficSimTest, StreamsHoldingPermitsUntilTheirEndMakeTheLimitGrow) {
  // The default: a stream holds its permit for its whole life (about 20 at a time here). The
  // limit grows to carry them (demand, no queue upstream) after a short transient.
  auto r = run(streams("rtt_gradient, unary 10ms + streams (open 2s), streams hold until the end",
                       RttGradientConfig{}));
  EXPECT_GT(r->mean_limit(20s, 60s), 25.0);
  EXPECT_LE(shed_share(r->phase(20s, 60s)), 0.01);
}

// ---- Traffic classes ----

SimConfig classes_in_slowdown(std::string policy, std::vector<FilterConfig> filters) {
  SimConfig c;
  c.policy = std::move(policy);
  c.filters = std::move(filters);
  c.upstream_workers = 1;
  c.schedule = ServiceSchedule({{10ms, 12s}, {40ms, 12s}, {10ms, 12s}});
  c.arrivals_per_second = 80;  // 15/s critical + 65/s sheddable
  c.classes = {SimClass{Criticality::Critical, 15}, SimClass{Criticality::Sheddable, 65}};
  return c;
}

TEST(RealTrafficSimTest, CriticalCallersKeepTheirGoodputThroughTheSlowdown) {
  QueueWaitBudgetConfig budget;
  budget.budget = kBudget;
  budget.budgets[index_of(Criticality::Critical)] = 1s;
  budget.budgets[index_of(Criticality::Sheddable)] = 10ms;
  RttGradientConfig g;
  g.queue_order = QueueOrder::AdaptiveLifo;
  auto r = run(classes_in_slowdown(
      "rtt_gradient adaptive_lifo, budgets critical 1s / sheddable 10ms, 15/s critical + 65/s "
      "sheddable",
      {FilterConfig{"queue_wait_budget", "queue_wait_budget", budget}, sim::rtt_gradient(g)}));
  // The slowdown leaves 25/s of capacity: critical demand (15/s) fits, sheddable absorbs the rest.
  const SimPhase critical = r->phase(13s, 24s, std::nullopt, Criticality::Critical);
  const double offered = static_cast<double>(critical.arrived) / 11.0;
  EXPECT_GE(critical.goodput_per_s, 0.95 * offered)
      << critical.goodput_per_s << "/s of " << offered << "/s";
  const SimPhase sheddable = r->phase(13s, 24s, std::nullopt, Criticality::Sheddable);
  EXPECT_GT(sheddable.shed, sheddable.arrived / 2);
  const SimPhase all = r->phase(13s, 24s);
  EXPECT_GE(all.upstream_busy, 0.95);  // and the worker stays busy
}

}  // namespace
}  // namespace sluice
