// A Clock that moves only when a test says so. One FakeClock is the shared timeline of every
// FakeDispatcher attached to it, so two fake workers see the same time and their timers and
// posted tasks run in one global order.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "src/core/time.h"

namespace sluice {

class FakeDispatcher;

class FakeClock final : public Clock {
 public:
  // Starts well away from the epoch so that `now - some_duration` never underflows in tests.
  explicit FakeClock(TimePoint start = TimePoint{} + std::chrono::hours(1));
  FakeClock(const FakeClock&) = delete;
  FakeClock& operator=(const FakeClock&) = delete;

  // Clock
  TimePoint now() const override;

  // Moves time forward by `d`, running on the calling thread every timer that falls due and every
  // task posted on any attached dispatcher, in time order (ties: posted tasks first, then timers
  // in the order they were armed). Tasks posted by callbacks run at the time they were posted.
  void advance(Duration d);
  void advance_to(TimePoint t);
  // Runs posted tasks of every attached dispatcher until none are left; time does not move.
  void run_pending();

 private:
  friend class FakeDispatcher;
  void attach(FakeDispatcher* d);
  void detach(FakeDispatcher* d);
  uint64_t next_sequence() { return sequence_.fetch_add(1, std::memory_order_relaxed); }
  bool run_posted_once();

  // Atomic because stress tests read now() from several threads while nobody advances it.
  std::atomic<int64_t> now_ns_;
  std::atomic<uint64_t> sequence_{0};
  mutable std::mutex mu_;  // guards dispatchers_ (attach/detach may come from any thread)
  std::vector<FakeDispatcher*> dispatchers_;
};

}  // namespace sluice
