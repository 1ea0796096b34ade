#include "src/proxy/health_state.h"

#include <algorithm>

namespace sluice {

HealthState::HealthState(uint32_t healthy_threshold, uint32_t unhealthy_threshold) {
  set_thresholds(healthy_threshold, unhealthy_threshold);
}

void HealthState::set_thresholds(uint32_t healthy_threshold, uint32_t unhealthy_threshold) {
  // Config validation keeps them >= 1; a 0 would make a state unleavable or flip on nothing.
  healthy_threshold_ = std::max<uint32_t>(healthy_threshold, 1);
  unhealthy_threshold_ = std::max<uint32_t>(unhealthy_threshold, 1);
}

bool HealthState::record(bool success) {
  if (success) {
    ++successes_;
    failures_ = 0;
  } else {
    ++failures_;
    successes_ = 0;
  }
  Status next = status_;
  switch (status_) {
    case Status::Unchecked:
      next = success ? Status::Healthy : Status::Unhealthy;
      break;
    case Status::Healthy:
      if (failures_ >= unhealthy_threshold_) next = Status::Unhealthy;
      break;
    case Status::Unhealthy:
      if (successes_ >= healthy_threshold_) next = Status::Healthy;
      break;
  }
  if (next == status_) return false;
  status_ = next;
  return true;
}

const char* health_status_name(HealthState::Status s) {
  switch (s) {
    case HealthState::Status::Unchecked:
      return "unchecked";
    case HealthState::Status::Healthy:
      return "healthy";
    case HealthState::Status::Unhealthy:
      return "unhealthy";
  }
  return "?";
}

}  // namespace sluice
