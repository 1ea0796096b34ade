#include "tests/filters/sim/sim_upstream.h"

#include <algorithm>
#include <functional>
#include <utility>

namespace sluice {

SimUpstream::SimUpstream(FakeDispatcher& dispatcher, uint32_t workers, ServiceSchedule schedule,
                         TimePoint start, double jitter, uint32_t seed, double cores)
    : dispatcher_(dispatcher),
      schedule_(std::move(schedule)),
      start_(start),
      jitter_(jitter),
      cores_(cores),
      rng_(seed),
      virtual_at_(start) {
  if (cores_ > 0) {
    shared_timer_ = dispatcher_.create_timer([this] { finish_shared(); });
    return;
  }
  for (uint32_t i = 0; i < workers; ++i) {
    auto w = std::make_unique<Worker>();
    Worker* raw = w.get();
    w->timer = dispatcher_.create_timer([this, raw] {
      raw->busy = false;
      ++served_;
      count(-1);
      std::function<void()> done = std::move(raw->on_response);
      start_next(*raw);
      if (!raw->busy) idle_.push_back(raw);
      done();
    });
    workers_.push_back(std::move(w));
  }
  // Idle workers are taken from the back: worker 0 first, as the old linear search did.
  for (auto it = workers_.rbegin(); it != workers_.rend(); ++it) idle_.push_back(it->get());
}

void SimUpstream::count(int delta) {
  in_system_ = static_cast<uint32_t>(static_cast<int>(in_system_) + delta);
  in_system_log_.emplace_back(dispatcher_.now() - start_, in_system_);
}

Duration SimUpstream::draw_service(const std::optional<Duration>& own) {
  const Duration since = dispatcher_.now() - start_;
  Duration service = own.value_or(schedule_.service_at(since));
  if (jitter_ > 0 && !own) {
    std::uniform_real_distribution<double> spread(1 - jitter_, 1 + jitter_);
    service = std::chrono::duration_cast<Duration>(service * spread(rng_));
  }
  if (ambient_) service = std::chrono::duration_cast<Duration>(service * ambient_(since));
  if (load_ambient_) {
    recent_starts_.push_back(since);
    while (since - recent_starts_.front() > kLoadWindow) recent_starts_.pop_front();
    const double rate = static_cast<double>(recent_starts_.size()) /
                        std::chrono::duration<double>(kLoadWindow).count();
    service = std::chrono::duration_cast<Duration>(service * load_ambient_(rate));
  }
  return service;
}

void SimUpstream::submit(std::function<void()> on_response, std::optional<Duration> service) {
  count(+1);
  if (cores_ > 0) {
    advance_shared();
    const Duration work = draw_service(service);
    shared_.push_back(Shared{virtual_ns_ + static_cast<double>(work.count()), shared_sequence_++,
                             std::move(on_response)});
    std::push_heap(shared_.begin(), shared_.end(), std::greater<>());
    arm_shared();
    return;
  }
  queue_.push_back(Job{std::move(on_response), service});
  if (idle_.empty()) return;
  Worker* w = idle_.back();
  idle_.pop_back();
  start_next(*w);
}

void SimUpstream::start_next(Worker& w) {
  if (queue_.empty()) return;
  Job job = std::move(queue_.front());
  queue_.pop_front();
  w.on_response = std::move(job.on_response);
  w.busy = true;
  const Duration since = dispatcher_.now() - start_;
  const Duration service = draw_service(job.service);
  busy_.emplace_back(since, since + service);
  w.timer->arm(service);
}

void SimUpstream::advance_shared() {
  const TimePoint now = dispatcher_.now();
  const auto n = static_cast<double>(shared_.size());
  const auto elapsed = static_cast<double>((now - virtual_at_).count());
  if (n > 0) {
    virtual_ns_ += elapsed * std::min(1.0, cores_ / n);
    busy_core_ns_ += elapsed * std::min(n, cores_);
  }
  virtual_at_ = now;
  busy_core_log_.emplace_back(now - start_, busy_core_ns_);
}

void SimUpstream::arm_shared() {
  if (shared_.empty()) {
    shared_timer_->cancel();
    return;
  }
  const double rate = std::min(1.0, cores_ / static_cast<double>(shared_.size()));
  const double left = std::max(0.0, shared_.front().finish - virtual_ns_) / rate;
  shared_timer_->arm(Duration(static_cast<int64_t>(left + 0.5)));
}

void SimUpstream::finish_shared() {
  advance_shared();
  std::vector<std::function<void()>> done;
  // Whatever is due within a nanosecond of now (rounding of the timer).
  while (!shared_.empty() && shared_.front().finish <= virtual_ns_ + 1.0) {
    std::pop_heap(shared_.begin(), shared_.end(), std::greater<>());
    done.push_back(std::move(shared_.back().on_response));
    shared_.pop_back();
    ++served_;
    count(-1);
  }
  arm_shared();
  for (auto& d : done) d();
}

double SimUpstream::busy_fraction(Duration from, Duration to) const {
  if (cores_ > 0) {
    auto at = [this](Duration t) {
      auto it = std::upper_bound(
          busy_core_log_.begin(), busy_core_log_.end(), t,
          [](Duration v, const std::pair<Duration, double>& e) { return v < e.first; });
      return it == busy_core_log_.begin() ? 0.0 : std::prev(it)->second;
    };
    return (at(to) - at(from)) / (static_cast<double>((to - from).count()) * cores_);
  }
  Duration busy{};
  for (const auto& [b, e] : busy_) {
    const Duration lo = std::max(b, from);
    const Duration hi = std::min(e, to);
    if (hi > lo) busy += hi - lo;
  }
  return static_cast<double>(busy.count()) /
         (static_cast<double>((to - from).count()) * static_cast<double>(workers_.size()));
}

uint32_t SimUpstream::max_in_system(Duration from, Duration to) const {
  auto it = std::upper_bound(
      in_system_log_.begin(), in_system_log_.end(), from,
      [](Duration v, const std::pair<Duration, uint32_t>& e) { return v < e.first; });
  uint32_t m = it == in_system_log_.begin() ? 0 : std::prev(it)->second;
  for (; it != in_system_log_.end() && it->first < to; ++it) m = std::max(m, it->second);
  return m;
}

}  // namespace sluice
