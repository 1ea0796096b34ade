// Service time of the simulated workers over time: a fixed --delay, or a --schedule of steps such
// as "10ms:12s,40ms:12s,10ms:12s" (10 ms for 12 s, then 40 ms for 12 s, then 10 ms for 12 s), or
// a --distribution every job draws its own service time from.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "integration/upstream/service_distribution.h"
#include "src/core/time.h"

namespace sluice::itest {

// When the schedule's clock starts. kFirstRequest lines the steps up with a load generator that
// starts some time after the upstream; kProcessStart with wall-clock experiments.
enum class ScheduleStart { kFirstRequest, kProcessStart };

struct ScheduleStep {
  Duration service_time;
  Duration length;
};

class ServiceSchedule {
 public:
  // "SERVICE:LENGTH[,SERVICE:LENGTH...]"; nullopt on any malformed step or zero length.
  static std::optional<std::vector<ScheduleStep>> parse(std::string_view text);

  // With no steps every job gets `delay`. After the last step, its service time holds.
  ServiceSchedule(Duration delay, std::vector<ScheduleStep> steps, ScheduleStart start,
                  TimePoint process_start);

  // From now on every job draws its service time from `distribution` (instead of the delay or the
  // steps; main() refuses both). Call before the first job.
  void set_distribution(ServiceDistribution distribution, uint64_t seed);

  // Starts the schedule's clock if it waits for the first request. Thread-safe.
  void note_request(TimePoint now);
  // Service time for a job starting at `now` (starts the clock too). Thread-safe.
  Duration service_time_at(TimePoint now);
  // Service time at `now` without starting the clock (for stats); a distribution's median.
  Duration peek(TimePoint now) const;
  // Starts over: at the next request (kFirstRequest) or at `now` (kProcessStart).
  void restart(TimePoint now);

 private:
  static constexpr int64_t kNotStarted = INT64_MIN;

  Duration lookup(int64_t origin, TimePoint now) const;

  Duration delay_;
  std::vector<ScheduleStep> steps_;
  ScheduleStart start_;
  // Steady-clock nanoseconds of the schedule's start, or kNotStarted; set once by CAS.
  std::atomic<int64_t> origin_ns_;
  std::unique_ptr<ServiceTimeSampler> sampler_;
};

}  // namespace sluice::itest
