#include "tests/fakes/fake_clock.h"

#include <algorithm>
#include <optional>

#include "tests/fakes/fake_dispatcher.h"

namespace sluice {

FakeClock::FakeClock(TimePoint start) : now_ns_(start.time_since_epoch().count()) {}

TimePoint FakeClock::now() const {
  return TimePoint{Duration{now_ns_.load(std::memory_order_acquire)}};
}

void FakeClock::attach(FakeDispatcher* d) {
  std::lock_guard lock(mu_);
  dispatchers_.push_back(d);
}

void FakeClock::detach(FakeDispatcher* d) {
  std::lock_guard lock(mu_);
  dispatchers_.erase(std::remove(dispatchers_.begin(), dispatchers_.end(), d), dispatchers_.end());
}

bool FakeClock::run_posted_once() {
  std::vector<FakeDispatcher*> ds;
  {
    std::lock_guard lock(mu_);
    ds = dispatchers_;
  }
  bool ran = false;
  for (FakeDispatcher* d : ds) ran = d->run_pending() > 0 || ran;
  return ran;
}

void FakeClock::run_pending() {
  while (run_posted_once()) {
  }
}

void FakeClock::advance(Duration d) { advance_to(now() + d); }

void FakeClock::advance_to(TimePoint target) {
  for (;;) {
    run_pending();
    // The earliest armed timer across all dispatchers, if it is due by `target`.
    FakeDispatcher* owner = nullptr;
    std::optional<FakeDispatcher::TimerKey> best;
    {
      std::lock_guard lock(mu_);
      for (FakeDispatcher* d : dispatchers_) {
        auto key = d->next_timer();
        if (key && key->due <= target && (!best || *key < *best)) {
          best = key;
          owner = d;
        }
      }
    }
    if (!best) break;
    if (best->due > now())
      now_ns_.store(best->due.time_since_epoch().count(), std::memory_order_release);
    owner->fire_timer(best->id);
  }
  if (target > now()) now_ns_.store(target.time_since_epoch().count(), std::memory_order_release);
  run_pending();
}

}  // namespace sluice
