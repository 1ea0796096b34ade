// Time vocabulary shared by every layer: a steady clock, and a Clock interface tests can fake.
#pragma once

#include <chrono>

namespace sluice {

using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;
using Duration = std::chrono::nanoseconds;

// A per-thread cache of the monotonic clock for the hot path. An event-loop handler that does
// per-request work opens a LoopTime::Scope: the clock is read once when the scope opens, and
// every LoopTime::now() inside it (all requests of one read batch) returns that reading.
// Outside any scope, now() reads the clock. One clock read per handler instead of ~8 per call
// (the vDSO read was 3.6% of the proxy's CPU in the proxy-cost benchmark); the price is that
// times inside a handler are as of its start, off by the handler's run time (microseconds).
class LoopTime {
 public:
  static TimePoint now() { return cached_ != TimePoint{} ? cached_ : SteadyClock::now(); }

  class Scope {
   public:
    Scope() : owner_(cached_ == TimePoint{}) {
      if (owner_) cached_ = SteadyClock::now();
    }
    ~Scope() {
      if (owner_) cached_ = TimePoint{};
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    bool owner_;
  };

 private:
  static inline thread_local TimePoint cached_{};
};

// Source of the current time. Real code uses RealClock; tests advance a fake one.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

// The process's monotonic clock (through LoopTime: cached inside an event-loop handler).
class RealClock final : public Clock {
 public:
  TimePoint now() const override { return LoopTime::now(); }
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
