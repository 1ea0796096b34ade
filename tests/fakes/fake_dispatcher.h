// A Dispatcher for tests: posted tasks wait until the test runs them, timers fire only when the
// shared FakeClock is advanced. Several FakeDispatchers on one FakeClock model several workers.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "src/core/dispatcher.h"
#include "tests/fakes/fake_clock.h"

namespace sluice {

class FakeDispatcher final : public Dispatcher {
 public:
  explicit FakeDispatcher(FakeClock& clock, uint32_t worker_index = 0);
  ~FakeDispatcher() override;
  FakeDispatcher(const FakeDispatcher&) = delete;
  FakeDispatcher& operator=(const FakeDispatcher&) = delete;

  // Dispatcher
  void post(std::function<void()> fn) override;  // any thread
  std::unique_ptr<Timer> create_timer(std::function<void()> cb) override;
  TimePoint now() const override { return clock_.now(); }
  uint32_t worker_index() const override { return worker_index_; }

  // Advances the shared clock (see FakeClock::advance): runs due work of every dispatcher on it.
  void advance(Duration d) { clock_.advance(d); }
  // Runs this dispatcher's posted tasks in order, including tasks they post, until none are
  // left. Returns how many ran. Call from the thread that plays this worker.
  size_t run_pending();

  size_t posted() const;        // tasks waiting to run
  size_t armed_timers() const;  // timers armed and not yet fired
  FakeClock& clock() { return clock_; }

 private:
  friend class FakeClock;
  friend class FakeTimer;

  // Orders timers by due time, then by the global order in which they were armed.
  struct TimerKey {
    TimePoint due;
    uint64_t sequence;
    uint64_t id;
    bool operator<(const TimerKey& o) const {
      return due != o.due ? due < o.due : sequence < o.sequence;
    }
  };
  struct TimerEntry {
    std::function<void()> cb;
    std::optional<TimerKey> key;  // set while armed
  };

  std::optional<TimerKey> next_timer() const;
  void fire_timer(uint64_t id);
  void arm_timer(uint64_t id, Duration after);
  void cancel_timer(uint64_t id);
  void remove_timer(uint64_t id);
  bool timer_armed(uint64_t id) const;

  FakeClock& clock_;
  const uint32_t worker_index_;
  mutable std::mutex mu_;  // guards posted_ only: timers are used from the test thread
  std::deque<std::function<void()>> posted_;
  uint64_t next_timer_id_ = 1;
  std::map<uint64_t, TimerEntry> timers_;
};

}  // namespace sluice
