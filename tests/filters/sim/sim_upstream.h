// A deterministic upstream service on a FakeDispatcher; accepts everything it is sent, like a
// real server with no admission control. Two shapes:
//  - N workers taking requests from one FIFO queue (a gRPC server's thread pool), each spending
//    the request's service time on it;
//  - goroutine per request on a CPU of `cores` cores (processor sharing): every request starts at
//    once, and while n > cores run together each progresses at cores / n of its speed.
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
  // scheduled one (seeded, so still deterministic). `cores` > 0: processor sharing on that many
  // cores, `workers` ignored.
  SimUpstream(FakeDispatcher& dispatcher, uint32_t workers, ServiceSchedule schedule,
              TimePoint start, double jitter = 0, uint32_t seed = 1, double cores = 0);

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

  // Fraction of worker time spent serving within [from, to) (both relative to the start); with
  // processor sharing, of the cores' time.
  double busy_fraction(Duration from, Duration to) const;
  // The most requests it held at once (queued and in service) within [from, to).
  uint32_t max_in_system(Duration from, Duration to) const;
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
  // A request under processor sharing: done once the shared virtual time reaches `finish`.
  struct Shared {
    double finish = 0;  // virtual ns
    uint64_t sequence = 0;
    std::function<void()> on_response;
    bool operator>(const Shared& o) const {
      return finish != o.finish ? finish > o.finish : sequence > o.sequence;
    }
  };

  Duration draw_service(const std::optional<Duration>& own);
  void start_next(Worker& w);
  void count(int delta);
  // Processor sharing: advances virtual time to now and re-arms the completion timer.
  void advance_shared();
  void arm_shared();
  void finish_shared();

  FakeDispatcher& dispatcher_;
  ServiceSchedule schedule_;
  TimePoint start_;
  double jitter_;
  double cores_;
  std::function<double(Duration)> ambient_;
  std::function<double(double)> load_ambient_;
  std::deque<Duration> recent_starts_;  // within kLoadWindow, for load_ambient_
  std::mt19937 rng_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Worker*> idle_;
  std::deque<Job> queue_;
  std::vector<std::pair<Duration, Duration>> busy_;  // service intervals since the start
  uint64_t served_ = 0;
  uint32_t in_system_ = 0;
  std::vector<std::pair<Duration, uint32_t>> in_system_log_;  // (since start, count after)
  // Processor sharing.
  std::vector<Shared> shared_;  // a min-heap on finish (std::greater)
  double virtual_ns_ = 0;
  TimePoint virtual_at_{};
  uint64_t shared_sequence_ = 0;
  std::unique_ptr<Timer> shared_timer_;
  double busy_core_ns_ = 0;  // core time spent, for busy_fraction under sharing
  std::vector<std::pair<Duration, double>> busy_core_log_;  // (since start, busy_core_ns_)
};

}  // namespace sluice
