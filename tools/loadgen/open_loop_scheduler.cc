#include "tools/loadgen/open_loop_scheduler.h"

#include <utility>

namespace sluice::loadgen {

OpenLoopScheduler::OpenLoopScheduler(ArrivalSchedule schedule, uint64_t max_outstanding,
                                     Duration max_lateness, const Clock& clock, TimePoint start)
    : schedule_(std::move(schedule)),
      max_outstanding_(max_outstanding),
      max_lateness_(max_lateness),
      clock_(clock),
      start_(start),
      counters_(schedule_.phases().size()) {
  pending_ = schedule_.next();
}

std::vector<SlotDecision> OpenLoopScheduler::poll() {
  std::vector<SlotDecision> decisions;
  const TimePoint now = clock_.now();
  while (pending_ && start_ + pending_->offset <= now) {
    SlotDecision d{*pending_, SlotOutcome::kLaunch, start_ + pending_->offset};
    SlotCounters& c = counters_[d.slot.phase];
    ++c.scheduled;
    if (max_lateness_ > Duration::zero() && now - d.due > max_lateness_) {
      d.outcome = SlotOutcome::kSkippedLate;
      ++c.skipped_late;
    } else if (max_outstanding_ != 0 && outstanding_ >= max_outstanding_) {
      d.outcome = SlotOutcome::kSkippedCap;
      ++c.skipped_cap;
    } else {
      ++outstanding_;
      ++c.launched;
    }
    decisions.push_back(d);
    pending_ = schedule_.next();
  }
  return decisions;
}

std::optional<TimePoint> OpenLoopScheduler::next_due() const {
  if (!pending_) return std::nullopt;
  return start_ + pending_->offset;
}

void OpenLoopScheduler::on_call_done() {
  if (outstanding_ > 0) --outstanding_;
}

}  // namespace sluice::loadgen
