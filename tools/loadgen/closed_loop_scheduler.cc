#include "tools/loadgen/closed_loop_scheduler.h"

#include <algorithm>
#include <utility>

namespace sluice::loadgen {

ClosedLoopScheduler::ClosedLoopScheduler(std::vector<Phase> phases, Duration think_time,
                                         const Clock& clock, TimePoint start)
    : phases_(std::move(phases)),
      think_time_(think_time),
      clock_(clock),
      issued_(phases_.size(), 0) {
  if (!phases_.empty()) begin_phase(start);
}

void ClosedLoopScheduler::begin_phase(TimePoint now) {
  windows_.push_back(PhaseWindow{now, std::nullopt});
  workers_.assign(phases_[phase_].workers, Worker{WorkerState::kReady, now});
}

bool ClosedLoopScheduler::may_issue(TimePoint now) const {
  const Phase& p = phases_[phase_];
  if (p.calls > 0) return issued_[phase_] < p.calls;
  return now < windows_[phase_].start + p.length;
}

std::vector<Launch> ClosedLoopScheduler::poll() {
  std::vector<Launch> launches;
  const TimePoint now = clock_.now();
  while (!finished()) {
    bool busy = false;
    for (uint32_t w = 0; w < workers_.size(); ++w) {
      Worker& worker = workers_[w];
      if (worker.state == WorkerState::kReady) {
        const bool can_issue = may_issue(now);
        // A worker still thinking is retired early once the phase can issue nothing more.
        if (can_issue && worker.ready_at > now) {
          busy = true;
          continue;
        }
        if (can_issue) {
          worker.state = WorkerState::kBusy;
          ++issued_[phase_];
          launches.push_back(Launch{w, phase_, worker.ready_at});
        } else {
          worker.state = WorkerState::kRetired;
        }
      }
      busy = busy || worker.state != WorkerState::kRetired;
    }
    if (busy) break;
    // Every worker retired: the phase is over now, and the next one starts at once.
    windows_[phase_].end = now;
    ++phase_;
    if (!finished()) begin_phase(now);
  }
  return launches;
}

void ClosedLoopScheduler::on_call_done(uint32_t worker) {
  if (finished() || worker >= workers_.size()) return;
  Worker& w = workers_[worker];
  if (w.state != WorkerState::kBusy) return;
  w.state = WorkerState::kReady;
  w.ready_at = clock_.now() + think_time_;
}

std::optional<TimePoint> ClosedLoopScheduler::next_due() const {
  std::optional<TimePoint> next;
  if (finished()) return next;
  for (const Worker& w : workers_) {
    if (w.state != WorkerState::kReady) continue;
    if (!next || w.ready_at < *next) next = w.ready_at;
  }
  // A time-bounded phase also ends on time even while workers think.
  const Phase& p = phases_[phase_];
  if (p.calls == 0 && next) next = std::min(*next, windows_[phase_].start + p.length);
  return next;
}

}  // namespace sluice::loadgen
