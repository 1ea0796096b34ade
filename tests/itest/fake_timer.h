// Test doubles for the worker pool: a clock tests set by hand and a timer that runs callbacks
// only when the test advances it.
#pragma once

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "integration/upstream/timer.h"
#include "src/core/time.h"

namespace sluice::itest {

class FakeClock final : public Clock {
 public:
  TimePoint now() const override { return now_; }
  void set(TimePoint t) { now_ = t; }

 private:
  TimePoint now_{std::chrono::seconds(1000)};
};

class FakeTimer final : public Timer {
 public:
  explicit FakeTimer(FakeClock& clock) : clock_(clock) {}

  void schedule(TimePoint at, std::function<void()> fn) override {
    pending_.push_back({at, seq_++, std::move(fn)});
  }

  // Moves the clock to `t`, running every callback due by then in deadline order (callbacks
  // scheduled while advancing run too if due).
  void advance_to(TimePoint t) {
    for (;;) {
      auto it = std::min_element(
          pending_.begin(), pending_.end(),
          [](const auto& a, const auto& b) { return a.at != b.at ? a.at < b.at : a.seq < b.seq; });
      if (it == pending_.end() || it->at > t) break;
      Entry e = std::move(*it);
      pending_.erase(it);
      clock_.set(e.at);
      e.fn();
    }
    clock_.set(t);
  }
  void advance(Duration d) { advance_to(clock_.now() + d); }

  size_t pending() const { return pending_.size(); }
  // Deadlines of pending callbacks, earliest first.
  std::vector<TimePoint> deadlines() const {
    std::vector<TimePoint> out;
    for (const auto& e : pending_) out.push_back(e.at);
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  struct Entry {
    TimePoint at;
    uint64_t seq;
    std::function<void()> fn;
  };
  FakeClock& clock_;
  std::vector<Entry> pending_;
  uint64_t seq_ = 0;
};

}  // namespace sluice::itest
