#include "tests/filters/sim/sim_run.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "tests/filters/sim/sim_policies.h"
#include "tests/filters/sim/sim_request.h"

namespace sluice {
namespace {

double percentile_ms(std::vector<Duration> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t rank =
      static_cast<size_t>(std::ceil(q * static_cast<double>(values.size()))) - (q > 0 ? 1 : 0);
  return to_ms(values[std::min(rank, values.size() - 1)]);
}

double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Standard normal from two uniforms (Box-Muller): the same numbers with any standard library.
double normal(std::mt19937_64& rng) {
  const double u1 = std::max(unit(rng), 1e-12);
  const double u2 = unit(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

Duration scaled(Duration d, double f) { return std::chrono::duration_cast<Duration>(d * f); }

}  // namespace

SimServiceTime sim_uniform(Duration low, Duration high) {
  return [low, high](std::mt19937_64& rng) { return low + scaled(high - low, unit(rng)); };
}

SimServiceTime sim_lognormal(Duration median, double sigma) {
  return [median, sigma](std::mt19937_64& rng) {
    return scaled(median, std::exp(sigma * normal(rng)));
  };
}

SimServiceTime sim_bimodal(double p, Duration a, Duration b) {
  return [p, a, b](std::mt19937_64& rng) {
    const Duration mode = unit(rng) < p ? a : b;
    return scaled(mode, 0.95 + 0.1 * unit(rng));
  };
}

SimAmbient sim_cpu_noise(Duration total, double max_factor, Duration min_segment,
                         Duration max_segment, double quiet_share, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  // (segment end, factor), ends increasing; the last segment reaches past `total`.
  std::vector<std::pair<Duration, double>> segments;
  Duration at{};
  while (at <= total) {
    at += min_segment + scaled(max_segment - min_segment, u(rng));
    const double factor = u(rng) < quiet_share ? 1.0 : 1.0 + (max_factor - 1.0) * u(rng);
    segments.emplace_back(at, factor);
  }
  return [segments = std::move(segments)](Duration since) {
    auto it = std::upper_bound(
        segments.begin(), segments.end(), since,
        [](Duration t, const std::pair<Duration, double>& seg) { return t < seg.first; });
    return it == segments.end() ? 1.0 : it->second;
  };
}

SimAmbient sim_hiccups(Duration total, Duration min_gap, Duration max_gap, Duration length,
                       Duration service, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Duration> starts;  // increasing
  for (Duration at = min_gap; at <= total;
       at += length + min_gap + scaled(max_gap - min_gap, u(rng))) {
    starts.push_back(at);
  }
  return [starts = std::move(starts), length, service](Duration since) {
    auto it = std::upper_bound(starts.begin(), starts.end(), since);
    if (it == starts.begin()) return 1.0;
    const Duration left = *std::prev(it) + length - since;
    return left > Duration{} ? 1.0 + to_ms(left) / to_ms(service) : 1.0;
  };
}

size_t SimRun::pick_method() {
  if (config_.methods.size() == 1) return 0;
  size_t phase = 0;
  const Duration since = since_start();
  while (phase + 1 < config_.schedule.phases().size() &&
         since >= config_.schedule.phase_start(phase + 1)) {
    ++phase;
  }
  std::vector<double> weights;
  double total = 0;
  for (const SimMethod& m : config_.methods) {
    const double w = m.weight_by_phase[std::min(phase, m.weight_by_phase.size() - 1)];
    weights.push_back(w);
    total += w;
  }
  double x = unit(rng_) * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (x < weights[i]) return i;
    x -= weights[i];
  }
  return weights.size() - 1;
}

Criticality SimRun::pick_class() {
  if (config_.classes.size() == 1) return config_.classes[0].criticality;
  double total = 0;
  for (const SimClass& c : config_.classes) total += c.share;
  double x = unit(rng_) * total;
  for (const SimClass& c : config_.classes) {
    if (x < c.share) return c.criticality;
    x -= c.share;
  }
  return config_.classes.back().criticality;
}

std::optional<Duration> SimRun::draw_service(size_t method) {
  const SimMethod& m = config_.methods[method];
  if (!m.service_by_phase.empty()) {
    size_t phase = 0;
    const Duration since = since_start();
    while (phase + 1 < config_.schedule.phases().size() &&
           since >= config_.schedule.phase_start(phase + 1)) {
      ++phase;
    }
    return m.service_by_phase[std::min(phase, m.service_by_phase.size() - 1)](rng_);
  }
  if (!m.service) return std::nullopt;
  return m.service(rng_);
}

SimRun::SimRun(SimConfig config)
    : config_(std::move(config)), start_(clock_.now()), rng_(config_.seed) {
  for (uint32_t i = 0; i < config_.proxy_workers; ++i) {
    workers_.push_back(std::make_unique<FakeDispatcher>(clock_, i));
  }
  upstream_dispatcher_ = std::make_unique<FakeDispatcher>(clock_, config_.proxy_workers);
  upstream_ = std::make_unique<SimUpstream>(*upstream_dispatcher_, config_.upstream_workers,
                                            config_.schedule, start_, config_.service_jitter,
                                            config_.seed, config_.upstream_cores);
  if (config_.ambient) upstream_->set_ambient(config_.ambient);
  if (config_.load_ambient) upstream_->set_load_ambient(config_.load_ambient);
  chain_ = make_filter_chain(config_.filters, "sim", registry_, clock_, sim::filter_types());
  if (config_.sampled_filter.empty() && !config_.filters.empty()) {
    const FilterConfig& last = config_.filters.back();
    config_.sampled_filter = last.name.empty() ? last.type : last.name;
  }
  arrival_timer_ = workers_[0]->create_timer([this] { arrive(); });
  sample_timer_ = workers_[0]->create_timer([this] {
    take_sample();
    sample_timer_->arm(config_.sample_every);
  });
}

SimRun::~SimRun() {
  // Requests still alive hold filters that reference the chain: drop them first.
  live_.clear();
}

void SimRun::run() {
  take_sample();
  sample_timer_->arm(config_.sample_every);
  if (config_.closed_loop_clients > 0) {
    for (uint32_t i = 0; i < config_.closed_loop_clients; ++i) {
      arrive_on(*workers_[i % workers_.size()]);
    }
  } else {
    schedule_arrival();
  }
  clock_.advance_to(start_ + config_.schedule.total());
  arrival_timer_->cancel();
  sample_timer_->cancel();
  // Let what was admitted or queued finish (bounded: the upstream drains at its own pace).
  clock_.advance(std::chrono::seconds(60));
}

void SimRun::schedule_arrival() {
  const double mean_gap_s = 1.0 / config_.arrivals_per_second;
  double gap_s = mean_gap_s;
  if (config_.poisson) {
    // Inverse-CDF from raw generator bits, so the sequence is the same with any standard library.
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    gap_s = -std::log(1.0 - u) * mean_gap_s;
  }
  arrival_timer_->arm(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(gap_s)));
}

void SimRun::arrive() {
  FakeDispatcher& worker = *workers_[next_arrival_worker_];
  next_arrival_worker_ = (next_arrival_worker_ + 1) % workers_.size();
  arrive_on(worker);
  schedule_arrival();
}

void SimRun::arrive_on(FakeDispatcher& worker) {
  const size_t id = records_.size();
  records_.emplace_back();
  worker.post([this, id, &worker] {
    auto request = std::make_unique<SimRequest>(*this, id, worker, *chain_);
    SimRequest* raw = request.get();
    live_.emplace(id, std::move(request));
    raw->start();
  });
}

void SimRun::on_request_end(SimRequest* request, const SimRecord& record, size_t id) {
  records_[id] = record;
  // Destroyed on the next turn: the request is still on the stack.
  request->dispatcher().post([this, id] { live_.erase(id); });
  // A closed-loop caller sends its next call at once, on the same worker.
  if (config_.closed_loop_clients > 0 && since_start() < config_.schedule.total()) {
    arrive_on(request->worker());
  }
}

void SimRun::take_sample() {
  SimSample s;
  s.at = since_start();
  for (const LimiterSnapshot& snap : chain_->snapshots()) {
    if (snap.filter != config_.sampled_filter) continue;
    s.limit = snap.limit;
    s.in_flight = snap.in_flight;
    s.queued = snap.queued;
    s.rtt_noload_ms = snap.rtt_noload_ms;
    s.rtt_smoothed_ms = snap.rtt_smoothed_ms;
    s.gradient = snap.gradient;
    s.p99_ms = snap.p99_ms;
    s.queue_calls = snap.queue_calls;
    s.service_calls = snap.service_calls;
    s.queue_delay_ms = snap.queue_delay_ms;
  }
  s.upstream_queued = upstream_->queued();
  samples_.push_back(s);
}

SimPhase SimRun::phase(Duration from, Duration to, std::optional<size_t> method,
                       std::optional<Criticality> criticality) const {
  SimPhase p;
  std::vector<Duration> rtts;
  std::vector<Duration> waits;
  std::vector<Duration> e2e;
  for (const SimRecord& r : records_) {
    if (r.arrival < from || r.arrival >= to) continue;
    if (method && r.method != *method) continue;
    if (criticality && r.criticality != *criticality) continue;
    ++p.arrived;
    waits.push_back(r.queue_wait);
    if (r.admitted) {
      ++p.admitted;
      if (r.rtt) rtts.push_back(*r.rtt);
      if (r.grpc_status == 0) {
        p.goodput_per_s += 1;
        ++p.ok;
        if (r.rtt) e2e.push_back(r.queue_wait + *r.rtt);
      }
    } else if (!r.shed_reason.empty()) {
      ++p.shed;
      ++p.shed_by_reason[r.shed_reason];
    }
  }
  p.goodput_per_s /= std::chrono::duration<double>(to - from).count();
  p.rtt_p50_ms = percentile_ms(rtts, 0.5);
  p.rtt_p99_ms = percentile_ms(rtts, 0.99);
  p.rtt_max_ms = percentile_ms(rtts, 1.0);
  p.e2e_p50_ms = percentile_ms(e2e, 0.5);
  p.e2e_p95_ms = percentile_ms(e2e, 0.95);
  p.e2e_p99_ms = percentile_ms(e2e, 0.99);
  p.queue_wait_p99_ms = percentile_ms(waits, 0.99);
  p.upstream_busy = upstream_->busy_fraction(from, to);
  return p;
}

const SimSample& SimRun::sample_at(Duration t) const {
  auto it = std::upper_bound(samples_.begin(), samples_.end(), t,
                             [](Duration v, const SimSample& s) { return v < s.at; });
  if (it == samples_.begin()) throw std::out_of_range("no sample before that time");
  return *std::prev(it);
}

uint32_t SimRun::limit_at(Duration t) const { return sample_at(t).limit; }

uint32_t SimRun::min_limit(Duration from, Duration to) const {
  uint32_t m = UINT32_MAX;
  for (const SimSample& s : samples_) {
    if (s.at >= from && s.at < to) m = std::min(m, s.limit);
  }
  return m;
}

uint32_t SimRun::max_limit(Duration from, Duration to) const {
  uint32_t m = 0;
  for (const SimSample& s : samples_) {
    if (s.at >= from && s.at < to) m = std::max(m, s.limit);
  }
  return m;
}

double SimRun::mean_limit(Duration from, Duration to) const {
  double sum = 0;
  size_t n = 0;
  for (const SimSample& s : samples_) {
    if (s.at >= from && s.at < to) {
      sum += s.limit;
      ++n;
    }
  }
  return n == 0 ? 0 : sum / static_cast<double>(n);
}

}  // namespace sluice
