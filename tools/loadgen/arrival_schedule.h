// The send slots of an open-loop plan: when each call is due, relative to the start of the run.
// Slots are computed from the plan alone, never from what the system under test did, so a slow
// server cannot make the generator offer less than it was asked to.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "src/core/time.h"
#include "tools/loadgen/phase.h"

namespace sluice::loadgen {

enum class ArrivalProcess { kFixed, kPoisson };

struct Slot {
  uint64_t index = 0;  // position in the whole plan, from 0
  size_t phase = 0;
  Duration offset{0};  // due time, from the start of the run
};

class ArrivalSchedule {
 public:
  // Every phase must be open-loop. The seed makes Poisson arrivals reproducible.
  ArrivalSchedule(std::vector<Phase> phases, ArrivalProcess process, uint64_t seed = 1);

  // The next slot in time order; nullopt once the last phase is over.
  std::optional<Slot> next();

  const std::vector<Phase>& phases() const { return phases_; }
  Duration phase_start(size_t phase) const { return starts_[phase]; }
  Duration phase_end(size_t phase) const { return starts_[phase] + phases_[phase].length; }

 private:
  // Due time of the next candidate slot in the current phase (may fall past its end).
  Duration candidate();

  std::vector<Phase> phases_;
  std::vector<Duration> starts_;
  ArrivalProcess process_;
  std::mt19937_64 rng_;
  size_t phase_ = 0;
  uint64_t in_phase_ = 0;   // slots already produced in the current phase
  uint64_t index_ = 0;      // slots already produced overall
  Duration poisson_at_{0};  // Poisson: due time of the last slot (or the phase start)
};

}  // namespace sluice::loadgen
