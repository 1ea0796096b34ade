// One deterministic run of the real filter chain against a SimUpstream: open-loop arrivals
// spread over two fake proxy workers, every request driven through ActiveChain exactly as the
// proxy drives it, the limiter's state sampled every few milliseconds. Everything runs on fake
// time, so a 36 s experiment takes milliseconds and always gives the same numbers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "filters/filter_chain.h"
#include "src/config/config.h"
#include "src/core/criticality.h"
#include "src/stats/stats_registry.h"
#include "tests/fakes/fake_dispatcher.h"
#include "tests/filters/sim/service_schedule.h"
#include "tests/filters/sim/sim_upstream.h"

namespace sluice {

class SimRequest;

// A service-time distribution: one draw per request (seeded, deterministic).
using SimServiceTime = std::function<Duration(std::mt19937_64&)>;
SimServiceTime sim_uniform(Duration low, Duration high);
SimServiceTime sim_lognormal(Duration median, double sigma);
// `a` with probability p, else `b`; each +-5% uniform.
SimServiceTime sim_bimodal(double p, Duration a, Duration b);

// A factor on every service time by the moment it starts: machine-wide noise that slows every
// call alike whatever the concurrency (neighbours taking the CPU). Empty: none.
using SimAmbient = std::function<double(Duration since_start)>;
// A factor on every service time by the rate services started at over the last 50 ms (calls/s):
// contention that grows with the work admitted. Empty: none.
using SimLoadAmbient = std::function<double(double starts_per_s)>;
// Piecewise constant: each segment lasts uniformly [min_segment, max_segment] and slows calls by
// a factor uniform in [1, max_factor]; `quiet_share` of the segments are 1 (no noise). Seeded.
SimAmbient sim_cpu_noise(Duration total, double max_factor, Duration min_segment,
                         Duration max_segment, double quiet_share, uint32_t seed);

// A process descheduled now and then (a busy host's CPU hiccups): every `min_gap`..`max_gap`
// (uniform, seeded), for `length`, a call that starts waits for the hiccup's end, so its service
// time grows by what is left of it (`service` is the typical service time the factor is taken
// against). Calls outside the hiccups: factor 1. Multiply with another ambient to combine them.
SimAmbient sim_hiccups(Duration total, Duration min_gap, Duration max_gap, Duration length,
                       Duration service, uint32_t seed);

// One method of the simulated service.
struct SimMethod {
  std::string path = "/sim.Service/Call";
  // Service time per request; absent: SimConfig::schedule (with service_jitter).
  SimServiceTime service;
  // Share of arrivals per schedule phase (the last entry holds for later phases).
  std::vector<double> weight_by_phase = {1.0};
  // A server stream: after its first message (one service time), it stays open this long
  // without holding an upstream worker. Zero: unary.
  Duration stream_tail{};
  // Per schedule phase instead of `service` (the last entry holds for later phases): one
  // method whose calls cost what their arguments ask, in a mix that shifts.
  std::vector<SimServiceTime> service_by_phase = {};
};

// One traffic class of callers: its share of the arrivals.
struct SimClass {
  Criticality criticality = Criticality::Critical;
  double share = 1.0;
};

struct SimConfig {
  std::string policy;  // a label for reports
  std::vector<FilterConfig> filters;
  std::string sampled_filter;  // whose limit is sampled; the last filter when empty
  uint32_t upstream_workers = 1;
  // > 0: the upstream starts every request at once (a goroutine per request) and shares this
  // many cores among them (processor sharing); upstream_workers is ignored.
  double upstream_cores = 0;
  ServiceSchedule schedule{{{std::chrono::milliseconds(10), std::chrono::seconds(1)}}};
  double arrivals_per_second = 80;
  bool poisson = false;  // exponential inter-arrival times instead of a fixed gap
  // > 0: closed loop instead: this many callers, each sending its next call as soon as its last
  // one ended (answered or shed), like h2load -c/-m; arrivals_per_second is ignored.
  uint32_t closed_loop_clients = 0;
  double service_jitter = 0;
  SimAmbient ambient;
  SimLoadAmbient load_ambient;
  uint32_t seed = 1;
  uint32_t proxy_workers = 2;
  Duration sample_every = std::chrono::milliseconds(10);
  std::vector<SimMethod> methods = {SimMethod{}};
  std::vector<SimClass> classes = {SimClass{}};
};

// What happened to one request.
struct SimRecord {
  Duration arrival{};  // since the start
  size_t method = 0;   // index into SimConfig::methods
  Criticality criticality = Criticality::Critical;
  bool admitted = false;
  Duration queue_wait{};
  std::optional<Duration> rtt;
  int grpc_status = -1;
  std::string shed_reason;
  bool ended = false;
};

// The sampled limiter's state at one moment.
struct SimSample {
  Duration at{};
  uint32_t limit = 0;
  uint32_t in_flight = 0;
  uint32_t queued = 0;
  std::optional<double> rtt_noload_ms;
  std::optional<double> rtt_smoothed_ms;
  std::optional<double> gradient;
  std::optional<double> p99_ms;
  // The queue estimator's last reading (QueueEstimator), and the truth it estimates: requests
  // waiting in the upstream's FIFO queue (worker upstreams; 0 under processor sharing).
  std::optional<double> queue_calls;
  std::optional<double> service_calls;
  std::optional<double> queue_delay_ms;
  size_t upstream_queued = 0;
};

// Requests that arrived within a time window, summarised.
struct SimPhase {
  size_t arrived = 0;
  size_t admitted = 0;
  size_t shed = 0;
  std::map<std::string, size_t> shed_by_reason;
  double rtt_p50_ms = 0;
  double rtt_p99_ms = 0;
  double rtt_max_ms = 0;
  double queue_wait_p99_ms = 0;
  // End to end (queue wait + RTT) of the calls answered OK, as a caller sees them.
  double e2e_p50_ms = 0;
  double e2e_p95_ms = 0;
  double e2e_p99_ms = 0;
  size_t ok = 0;
  double goodput_per_s = 0;  // admitted and answered OK, per second of the window
  double upstream_busy = 0;  // fraction of upstream worker time spent serving
};

class SimRun {
 public:
  explicit SimRun(SimConfig config);
  ~SimRun();

  // Runs the schedule to its end, then lets every request in flight finish.
  void run();

  const SimConfig& config() const { return config_; }
  const std::vector<SimRecord>& records() const { return records_; }
  const std::vector<SimSample>& samples() const { return samples_; }
  // Requests that arrived in [from, to), optionally only of one method or class.
  SimPhase phase(Duration from, Duration to, std::optional<size_t> method = std::nullopt,
                 std::optional<Criticality> criticality = std::nullopt) const;
  // The sampled limit at a moment, and its extremes over a window.
  uint32_t limit_at(Duration t) const;
  uint32_t min_limit(Duration from, Duration to) const;
  uint32_t max_limit(Duration from, Duration to) const;
  double mean_limit(Duration from, Duration to) const;
  // The most requests the upstream held at once (queued there and in service) within [from, to).
  uint32_t max_in_upstream(Duration from, Duration to) const {
    return upstream_->max_in_system(from, to);
  }
  const SimSample& sample_at(Duration t) const;
  StatsRegistry& registry() { return registry_; }
  FilterChain& chain() { return *chain_; }

  // Called by SimRequest.
  void on_request_end(SimRequest* request, const SimRecord& record, size_t id);
  SimUpstream& upstream() { return *upstream_; }
  Duration since_start() const { return clock_.now() - start_; }
  // Draws the method, class and (when the method has one) service time of a new request.
  size_t pick_method();
  Criticality pick_class();
  std::optional<Duration> draw_service(size_t method);
  FakeDispatcher& any_worker() { return *workers_[0]; }

 private:
  void schedule_arrival();
  void arrive();
  void arrive_on(FakeDispatcher& worker);
  void take_sample();

  SimConfig config_;
  FakeClock clock_;
  TimePoint start_;
  std::vector<std::unique_ptr<FakeDispatcher>> workers_;
  std::unique_ptr<FakeDispatcher> upstream_dispatcher_;
  std::unique_ptr<SimUpstream> upstream_;
  StatsRegistry registry_;
  std::unique_ptr<FilterChain> chain_;
  std::unique_ptr<Timer> arrival_timer_;
  std::unique_ptr<Timer> sample_timer_;
  std::mt19937_64 rng_;
  size_t next_arrival_worker_ = 0;
  std::unordered_map<size_t, std::unique_ptr<SimRequest>> live_;
  std::vector<SimRecord> records_;
  std::vector<SimSample> samples_;
};

}  // namespace sluice
