// The event loop a stream lives on, as seen by code that must not know about Asio (filters,
// permit-gate waiters). One per worker thread; tests use a fake that advances time by hand.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "src/core/time.h"

namespace sluice {

// A one-shot timer owned by whoever created it. Destroying it cancels it; the callback never
// runs after cancel() or destruction.
class Timer {
 public:
  virtual ~Timer() = default;
  // (Re)arms the timer to fire once after `after`. Re-arming replaces the previous schedule.
  virtual void arm(Duration after) = 0;
  virtual void cancel() = 0;
  virtual bool armed() const = 0;
};

class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  // Runs `fn` later on this dispatcher's thread. Safe to call from any thread.
  virtual void post(std::function<void()> fn) = 0;
  // Creates a timer whose callback runs on this dispatcher's thread. Call on that thread.
  virtual std::unique_ptr<Timer> create_timer(std::function<void()> cb) = 0;
  virtual TimePoint now() const = 0;
  // Index of the worker that runs this dispatcher (0-based); stable for the process lifetime.
  virtual uint32_t worker_index() const = 0;
};

}  // namespace sluice
