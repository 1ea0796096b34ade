#include "tests/fakes/fake_dispatcher.h"

#include <utility>

namespace sluice {

// The Timer handed out by FakeDispatcher: a handle onto an entry in the dispatcher's table.
class FakeTimer final : public Timer {
 public:
  FakeTimer(FakeDispatcher& d, uint64_t id) : dispatcher_(d), id_(id) {}
  ~FakeTimer() override { dispatcher_.remove_timer(id_); }
  FakeTimer(const FakeTimer&) = delete;
  FakeTimer& operator=(const FakeTimer&) = delete;

  // Timer
  void arm(Duration after) override { dispatcher_.arm_timer(id_, after); }
  void cancel() override { dispatcher_.cancel_timer(id_); }
  bool armed() const override { return dispatcher_.timer_armed(id_); }

 private:
  FakeDispatcher& dispatcher_;
  const uint64_t id_;
};

FakeDispatcher::FakeDispatcher(FakeClock& clock, uint32_t worker_index)
    : clock_(clock), worker_index_(worker_index) {
  clock_.attach(this);
}

FakeDispatcher::~FakeDispatcher() { clock_.detach(this); }

void FakeDispatcher::post(std::function<void()> fn) {
  std::lock_guard lock(mu_);
  posted_.push_back(std::move(fn));
}

size_t FakeDispatcher::run_pending() {
  size_t ran = 0;
  for (;;) {
    std::function<void()> fn;
    {
      std::lock_guard lock(mu_);
      if (posted_.empty()) break;
      fn = std::move(posted_.front());
      posted_.pop_front();
    }
    fn();
    ++ran;
  }
  return ran;
}

size_t FakeDispatcher::posted() const {
  std::lock_guard lock(mu_);
  return posted_.size();
}

size_t FakeDispatcher::armed_timers() const {
  size_t n = 0;
  for (const auto& [id, entry] : timers_) n += entry.key.has_value() ? 1 : 0;
  return n;
}

std::unique_ptr<Timer> FakeDispatcher::create_timer(std::function<void()> cb) {
  const uint64_t id = next_timer_id_++;
  timers_.emplace(id, TimerEntry{std::move(cb), std::nullopt});
  return std::make_unique<FakeTimer>(*this, id);
}

std::optional<FakeDispatcher::TimerKey> FakeDispatcher::next_timer() const {
  std::optional<TimerKey> best;
  for (const auto& [id, entry] : timers_) {
    if (entry.key && (!best || *entry.key < *best)) best = entry.key;
  }
  return best;
}

void FakeDispatcher::fire_timer(uint64_t id) {
  auto it = timers_.find(id);
  if (it == timers_.end() || !it->second.key) return;
  it->second.key.reset();
  // Like a real timer, the callback may destroy or re-arm its own timer: run a copy.
  std::function<void()> cb = it->second.cb;
  cb();
}

void FakeDispatcher::arm_timer(uint64_t id, Duration after) {
  auto it = timers_.find(id);
  if (it == timers_.end()) return;
  if (after < Duration::zero()) after = Duration::zero();
  it->second.key = TimerKey{clock_.now() + after, clock_.next_sequence(), id};
}

void FakeDispatcher::cancel_timer(uint64_t id) {
  auto it = timers_.find(id);
  if (it != timers_.end()) it->second.key.reset();
}

void FakeDispatcher::remove_timer(uint64_t id) { timers_.erase(id); }

bool FakeDispatcher::timer_armed(uint64_t id) const {
  auto it = timers_.find(id);
  return it != timers_.end() && it->second.key.has_value();
}

}  // namespace sluice
