// Closed-loop plan: in each phase N workers each start a call, wait for it to end (and for the
// think time), then start the next, until the phase's calls are issued or its time is up. A phase
// ends when its last call ends, so phases never overlap and each one measures its own concurrency.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "src/core/time.h"
#include "tools/loadgen/phase.h"

namespace sluice::loadgen {

struct Launch {
  uint32_t worker = 0;
  size_t phase = 0;
  TimePoint due;  // when the worker became ready (start of phase or end of think time)
};

// Actual start and end of a phase (closed-loop phases last as long as their calls do).
struct PhaseWindow {
  TimePoint start;
  std::optional<TimePoint> end;
};

class ClosedLoopScheduler {
 public:
  ClosedLoopScheduler(std::vector<Phase> phases, Duration think_time, const Clock& clock,
                      TimePoint start);

  // Calls to start now. Each MUST be reported with on_call_done(worker) when it ends.
  std::vector<Launch> poll();
  // A worker's call ended (any status); it may start again after the think time.
  void on_call_done(uint32_t worker);
  // Next time a waiting worker becomes ready; nullopt when nothing waits on time.
  std::optional<TimePoint> next_due() const;

  bool finished() const { return phase_ >= phases_.size(); }
  size_t phase() const { return phase_; }
  const std::vector<Phase>& phases() const { return phases_; }
  const std::vector<PhaseWindow>& windows() const { return windows_; }
  uint64_t issued(size_t phase) const { return issued_[phase]; }

 private:
  enum class WorkerState { kReady, kBusy, kRetired };
  struct Worker {
    WorkerState state = WorkerState::kReady;
    TimePoint ready_at;
  };

  void begin_phase(TimePoint now);
  bool may_issue(TimePoint now) const;

  std::vector<Phase> phases_;
  Duration think_time_;
  const Clock& clock_;
  size_t phase_ = 0;
  std::vector<Worker> workers_;
  std::vector<uint64_t> issued_;
  std::vector<PhaseWindow> windows_;
};

}  // namespace sluice::loadgen
