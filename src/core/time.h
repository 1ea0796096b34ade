// Time vocabulary shared by every layer: a steady clock, and a Clock interface tests can fake.
#pragma once

#include <chrono>

namespace sluice {

using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;
using Duration = std::chrono::nanoseconds;

// Source of the current time. Real code uses RealClock; tests advance a fake one.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

// The process's monotonic clock.
class RealClock final : public Clock {
 public:
  TimePoint now() const override { return SteadyClock::now(); }
  static const RealClock& instance() {
    static const RealClock clock;
    return clock;
  }
};

inline double to_ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
inline int64_t to_us(Duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

}  // namespace sluice
