// The health verdict of one address under active health checks: a small state machine fed one
// check result at a time. Pure (no clock, no I/O): the checker decides when to check.
//
//   Unchecked --success--> Healthy          (the first success counts at once, as in Envoy)
//   Unchecked --failure--> Unhealthy
//   Healthy   --unhealthy_threshold consecutive failures--> Unhealthy
//   Unhealthy --healthy_threshold consecutive successes--> Healthy
//
// A result that breaks a run resets the other count, so a flapping address changes state only
// when a whole run of the threshold's length happens.
#pragma once

#include <cstdint>

namespace sluice {

class HealthState {
 public:
  enum class Status { Unchecked, Healthy, Unhealthy };

  HealthState(uint32_t healthy_threshold, uint32_t unhealthy_threshold);

  // Records one check; returns true when the status changed.
  bool record(bool success);
  // New thresholds (a reload): the status and the current run are kept.
  void set_thresholds(uint32_t healthy_threshold, uint32_t unhealthy_threshold);

  Status status() const { return status_; }
  // Only a Healthy address gets new calls while another is healthy (Unchecked does not).
  bool healthy() const { return status_ == Status::Healthy; }
  uint32_t consecutive_successes() const { return successes_; }
  uint32_t consecutive_failures() const { return failures_; }

 private:
  uint32_t healthy_threshold_;
  uint32_t unhealthy_threshold_;
  Status status_ = Status::Unchecked;
  uint32_t successes_ = 0;
  uint32_t failures_ = 0;
};

const char* health_status_name(HealthState::Status s);

}  // namespace sluice
