#include "tests/filters/sim/sim_upstream.h"

#include <algorithm>
#include <utility>

namespace sluice {

SimUpstream::SimUpstream(FakeDispatcher& dispatcher, uint32_t workers, ServiceSchedule schedule,
                         TimePoint start, double jitter, uint32_t seed)
    : dispatcher_(dispatcher),
      schedule_(std::move(schedule)),
      start_(start),
      jitter_(jitter),
      rng_(seed) {
  for (uint32_t i = 0; i < workers; ++i) {
    auto w = std::make_unique<Worker>();
    Worker* raw = w.get();
    w->timer = dispatcher_.create_timer([this, raw] {
      raw->busy = false;
      ++served_;
      std::function<void()> done = std::move(raw->on_response);
      start_next(*raw);
      done();
    });
    workers_.push_back(std::move(w));
  }
}

void SimUpstream::submit(std::function<void()> on_response, std::optional<Duration> service) {
  queue_.push_back(Job{std::move(on_response), service});
  for (auto& w : workers_) {
    if (!w->busy) {
      start_next(*w);
      return;
    }
  }
}

void SimUpstream::start_next(Worker& w) {
  if (queue_.empty()) return;
  Job job = std::move(queue_.front());
  queue_.pop_front();
  w.on_response = std::move(job.on_response);
  w.busy = true;
  const Duration since = dispatcher_.now() - start_;
  Duration service = job.service.value_or(schedule_.service_at(since));
  if (jitter_ > 0 && !job.service) {
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
  busy_.emplace_back(since, since + service);
  w.timer->arm(service);
}

double SimUpstream::busy_fraction(Duration from, Duration to) const {
  Duration busy{};
  for (const auto& [b, e] : busy_) {
    const Duration lo = std::max(b, from);
    const Duration hi = std::min(e, to);
    if (hi > lo) busy += hi - lo;
  }
  return static_cast<double>(busy.count()) /
         (static_cast<double>((to - from).count()) * static_cast<double>(workers_.size()));
}

}  // namespace sluice
