#include "integration/upstream/timer_threads.h"

#include <algorithm>
#include <utility>

namespace sluice::itest {

TimerThreads::TimerThreads(uint32_t threads) {
  if (threads == 0) threads = 1;
  for (uint32_t i = 0; i < threads; ++i) lanes_.push_back(std::make_unique<Lane>());
  for (auto& lane : lanes_) lane->thread = std::thread([&l = *lane] { run(l); });
}

TimerThreads::~TimerThreads() { stop(); }

void TimerThreads::schedule(TimePoint at, std::function<void()> fn) {
  uint64_t seq = next_.fetch_add(1, std::memory_order_relaxed);
  Lane& lane = *lanes_[seq % lanes_.size()];
  {
    std::lock_guard lock(lane.mutex);
    lane.heap.push_back(Entry{at, seq, std::move(fn)});
    std::push_heap(lane.heap.begin(), lane.heap.end(), std::greater<>());
  }
  lane.wake.notify_one();
}

void TimerThreads::stop() {
  for (auto& lane : lanes_) {
    {
      std::lock_guard lock(lane->mutex);
      lane->stopping = true;
    }
    lane->wake.notify_one();
  }
  for (auto& lane : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
  }
}

void TimerThreads::run(Lane& lane) {
  std::unique_lock lock(lane.mutex);
  while (!lane.stopping) {
    if (lane.heap.empty()) {
      lane.wake.wait(lock);
      continue;
    }
    TimePoint due = lane.heap.front().at;
    if (SteadyClock::now() < due) {
      // Woken early by a new, possibly earlier entry or by stop(): re-check from the top.
      lane.wake.wait_until(lock, due);
      continue;
    }
    std::pop_heap(lane.heap.begin(), lane.heap.end(), std::greater<>());
    std::function<void()> fn = std::move(lane.heap.back().fn);
    lane.heap.pop_back();
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace sluice::itest
