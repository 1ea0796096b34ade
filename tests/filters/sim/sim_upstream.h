// A deterministic upstream service: N workers take requests from one FIFO queue (as a gRPC
// server's thread pool does) and spend the scheduled service time on each. Runs on a
// FakeDispatcher; accepts everything it is sent, like a real server with no admission control.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "tests/fakes/fake_dispatcher.h"
#include "tests/filters/sim/service_schedule.h"

namespace sluice {

class SimUpstream {
 public:
  // `jitter` spreads each service time uniformly over [1 - jitter, 1 + jitter] times the
  // scheduled one (seeded, so still deterministic).
  SimUpstream(FakeDispatcher& dispatcher, uint32_t workers, ServiceSchedule schedule,
              TimePoint start, double jitter = 0, uint32_t seed = 1);

  // A factor on every service time that starts at a moment (a machine-wide slowdown that hits
  // every call alike, whatever the concurrency: CPU contention from neighbours).
  void set_ambient(std::function<double(Duration since_start)> ambient) {
    ambient_ = std::move(ambient);
  }
  // A factor on every service time by the rate at which services started over the last
  // kLoadWindow (calls/s): CPU contention that grows with the work on the machine, so that
  // admitting less relieves it (what the 2-core rig shows near its limit).
  void set_load_ambient(std::function<double(double starts_per_s)> ambient) {
    load_ambient_ = std::move(ambient);
  }
  static constexpr Duration kLoadWindow = std::chrono::milliseconds(50);

  // Queues a request; `on_response` runs on the upstream's dispatcher when its service ends.
  // `service` overrides the schedule's service time (a request that brings its own).
  void submit(std::function<void()> on_response, std::optional<Duration> service = std::nullopt);

  // Fraction of worker time spent serving within [from, to) (both relative to the start).
  double busy_fraction(Duration from, Duration to) const;
  size_t queued() const { return queue_.size(); }
  uint64_t served() const { return served_; }

 private:
  struct Job {
    std::function<void()> on_response;
    std::optional<Duration> service;
  };
  struct Worker {
    std::unique_ptr<Timer> timer;
    std::function<void()> on_response;
    bool busy = false;
  };

  void start_next(Worker& w);

  FakeDispatcher& dispatcher_;
  ServiceSchedule schedule_;
  TimePoint start_;
  double jitter_;
  std::function<double(Duration)> ambient_;
  std::function<double(double)> load_ambient_;
  std::deque<Duration> recent_starts_;  // within kLoadWindow, for load_ambient_
  std::mt19937 rng_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::deque<Job> queue_;
  std::vector<std::pair<Duration, Duration>> busy_;  // service intervals since the start
  uint64_t served_ = 0;
};

}  // namespace sluice
