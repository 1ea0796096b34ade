// Timer backed by N threads (--threads), each with its own heap, so one slow callback does not
// delay every other simulated worker.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "integration/upstream/timer.h"

namespace sluice::itest {

class TimerThreads final : public Timer {
 public:
  explicit TimerThreads(uint32_t threads);
  ~TimerThreads() override;
  TimerThreads(const TimerThreads&) = delete;
  TimerThreads& operator=(const TimerThreads&) = delete;

  // Timer
  void schedule(TimePoint at, std::function<void()> fn) override;

  // Stops the threads; callbacks not yet due are dropped. Idempotent.
  void stop();

 private:
  struct Entry {
    TimePoint at;
    uint64_t seq;  // FIFO among equal deadlines
    std::function<void()> fn;
    bool operator>(const Entry& other) const {
      return at != other.at ? at > other.at : seq > other.seq;
    }
  };
  struct Lane {
    std::mutex mutex;
    std::condition_variable wake;
    std::vector<Entry> heap;  // min-heap on (at, seq) via std::push_heap/pop_heap
    bool stopping = false;
    std::thread thread;
  };

  static void run(Lane& lane);

  std::vector<std::unique_ptr<Lane>> lanes_;
  std::atomic<uint64_t> next_{0};
};

}  // namespace sluice::itest
