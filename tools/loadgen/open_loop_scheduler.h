// Decides, slot by slot, whether an open-loop call is sent or skipped. A slot is never delayed:
// when it comes due while the cap on outstanding calls is reached it is skipped, and a slot the
// generator itself reaches too late (its thread was descheduled) is skipped too, so neither the
// server nor the client can quietly turn an open loop into a closed one.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "src/core/time.h"
#include "tools/loadgen/arrival_schedule.h"

namespace sluice::loadgen {

enum class SlotOutcome {
  kLaunch,       // the caller MUST start the call now and report it with on_call_done()
  kSkippedCap,   // max_outstanding calls were in flight
  kSkippedLate,  // the generator saw the slot more than max_lateness after it was due
};

struct SlotDecision {
  Slot slot;
  SlotOutcome outcome = SlotOutcome::kLaunch;
  TimePoint due;
};

struct SlotCounters {
  uint64_t scheduled = 0;
  uint64_t launched = 0;
  uint64_t skipped_cap = 0;
  uint64_t skipped_late = 0;
};

class OpenLoopScheduler {
 public:
  // max_outstanding: 0 means no cap. max_lateness: zero disables the lateness check.
  OpenLoopScheduler(ArrivalSchedule schedule, uint64_t max_outstanding, Duration max_lateness,
                    const Clock& clock, TimePoint start);

  // Decides every slot due by now, in order.
  std::vector<SlotDecision> poll();
  // When the next slot is due; nullopt once every slot has been decided.
  std::optional<TimePoint> next_due() const;
  // A launched call ended (any status).
  void on_call_done();

  bool finished() const { return !pending_.has_value(); }
  uint64_t outstanding() const { return outstanding_; }
  const SlotCounters& counters(size_t phase) const { return counters_[phase]; }
  const ArrivalSchedule& schedule() const { return schedule_; }
  TimePoint start() const { return start_; }

 private:
  ArrivalSchedule schedule_;
  uint64_t max_outstanding_;
  Duration max_lateness_;
  const Clock& clock_;
  TimePoint start_;
  std::optional<Slot> pending_;  // the next undecided slot
  uint64_t outstanding_ = 0;
  std::vector<SlotCounters> counters_;
};

}  // namespace sluice::loadgen
