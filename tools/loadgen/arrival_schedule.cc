#include "tools/loadgen/arrival_schedule.h"

#include <cmath>
#include <utility>

namespace sluice::loadgen {

ArrivalSchedule::ArrivalSchedule(std::vector<Phase> phases, ArrivalProcess process, uint64_t seed)
    : phases_(std::move(phases)), process_(process), rng_(seed) {
  Duration at{0};
  for (const Phase& p : phases_) {
    starts_.push_back(at);
    at += p.length;
  }
  if (!phases_.empty()) poisson_at_ = starts_[0];
}

Duration ArrivalSchedule::candidate() {
  const Phase& p = phases_[phase_];
  if (process_ == ArrivalProcess::kFixed) {
    // Computed from the slot number rather than by adding intervals, so rounding never drifts:
    // 80/s for 36 s is exactly 2,880 slots.
    double nanos = static_cast<double>(in_phase_) * 1e9 / p.rate;
    return starts_[phase_] + Duration(std::llround(nanos));
  }
  std::exponential_distribution<double> gap(p.rate);
  return poisson_at_ + Duration(std::llround(gap(rng_) * 1e9));
}

std::optional<Slot> ArrivalSchedule::next() {
  while (phase_ < phases_.size()) {
    const Phase& p = phases_[phase_];
    if (p.rate > 0) {
      Duration due = candidate();
      if (due < phase_end(phase_)) {
        poisson_at_ = due;
        ++in_phase_;
        return Slot{index_++, phase_, due};
      }
    }
    // Phases restart their arrivals at their own start: a Poisson gap never spans two phases,
    // so a phase's offered load depends on its rate alone.
    ++phase_;
    in_phase_ = 0;
    if (phase_ < phases_.size()) poisson_at_ = starts_[phase_];
  }
  return std::nullopt;
}

}  // namespace sluice::loadgen
