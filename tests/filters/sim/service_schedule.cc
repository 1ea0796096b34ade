#include "tests/filters/sim/service_schedule.h"

#include <utility>

namespace sluice {

ServiceSchedule::ServiceSchedule(std::vector<Phase> phases) : phases_(std::move(phases)) {}

Duration ServiceSchedule::service_at(Duration since_start) const {
  Duration end{};
  for (const Phase& p : phases_) {
    end += p.length;
    if (since_start < end) return p.service;
  }
  return phases_.back().service;
}

Duration ServiceSchedule::total() const {
  Duration t{};
  for (const Phase& p : phases_) t += p.length;
  return t;
}

Duration ServiceSchedule::phase_start(size_t index) const {
  Duration t{};
  for (size_t i = 0; i < index && i < phases_.size(); ++i) t += phases_[i].length;
  return t;
}

}  // namespace sluice
