// Runs a function at a point in time. The worker pool's only view of time passing, so tests can
// drive it by hand.
#pragma once

#include <functional>

#include "src/core/time.h"

namespace sluice::itest {

class Timer {
 public:
  virtual ~Timer() = default;
  // Runs `fn` once, at or shortly after `at`, on a thread of the timer's choosing.
  virtual void schedule(TimePoint at, std::function<void()> fn) = 0;
};

}  // namespace sluice::itest
