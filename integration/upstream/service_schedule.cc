#include "integration/upstream/service_schedule.h"

#include <utility>

#include "integration/common/duration_text.h"

namespace sluice::itest {

std::optional<std::vector<ScheduleStep>> ServiceSchedule::parse(std::string_view text) {
  std::vector<ScheduleStep> steps;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    // A trailing comma would leave an empty item: reject it rather than guess.
    if (comma != std::string_view::npos && text.empty()) return std::nullopt;
    size_t colon = item.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    auto service = parse_duration(item.substr(0, colon));
    auto length = parse_duration(item.substr(colon + 1));
    if (!service || !length || *length <= Duration::zero()) return std::nullopt;
    steps.push_back({*service, *length});
  }
  if (steps.empty()) return std::nullopt;
  return steps;
}

ServiceSchedule::ServiceSchedule(Duration delay, std::vector<ScheduleStep> steps,
                                 ScheduleStart start, TimePoint process_start)
    : delay_(delay),
      steps_(std::move(steps)),
      start_(start),
      origin_ns_(start == ScheduleStart::kProcessStart ? process_start.time_since_epoch().count()
                                                       : kNotStarted) {}

void ServiceSchedule::set_distribution(ServiceDistribution distribution, uint64_t seed) {
  sampler_ = std::make_unique<ServiceTimeSampler>(std::move(distribution), seed);
}

void ServiceSchedule::note_request(TimePoint now) {
  int64_t expected = kNotStarted;
  origin_ns_.compare_exchange_strong(expected, now.time_since_epoch().count());
}

Duration ServiceSchedule::service_time_at(TimePoint now) {
  if (sampler_) return sampler_->sample();
  if (steps_.empty()) return delay_;
  note_request(now);
  return lookup(origin_ns_.load(), now);
}

Duration ServiceSchedule::peek(TimePoint now) const {
  if (sampler_) return sampler_->distribution().median();
  if (steps_.empty()) return delay_;
  int64_t origin = origin_ns_.load();
  if (origin == kNotStarted) return steps_.front().service_time;
  return lookup(origin, now);
}

void ServiceSchedule::restart(TimePoint now) {
  origin_ns_.store(start_ == ScheduleStart::kProcessStart ? now.time_since_epoch().count()
                                                          : kNotStarted);
}

Duration ServiceSchedule::lookup(int64_t origin, TimePoint now) const {
  Duration elapsed = now.time_since_epoch() - Duration(origin);
  for (const ScheduleStep& step : steps_) {
    if (elapsed < step.length) return step.service_time;
    elapsed -= step.length;
  }
  return steps_.back().service_time;
}

}  // namespace sluice::itest
