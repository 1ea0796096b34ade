// `queue_wait_budget`, per request: a request that is not admitted (has not passed the whole
// chain) within the budget, counted from when its headers were complete, is shed with
// RESOURCE_EXHAUSTED. Deadline-aware: when the caller's grpc-timeout leaves less than the budget,
// the remaining deadline is the budget, and a request still waiting when it expires is answered
// DEADLINE_EXCEEDED without ever reaching the upstream. Each traffic class may have its own budget.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "filters/filter.h"
#include "filters/filter_stats.h"
#include "src/core/dispatcher.h"
#include "src/stats/gauge.h"

namespace sluice {

// What every request of one queue_wait_budget filter shares; owned by its factory.
struct QueueWaitBudgetShared {
  // Per class, indexed by index_of(Criticality): `budget`, or its `budgets:` override.
  std::array<Duration, kCriticalityCount> budgets{};
  std::optional<Duration> retry_pushback;
  const Clock* clock = nullptr;
  std::unique_ptr<FilterStats> stats;
  Gauge* queued = nullptr;     // requests waiting for a later filter, being timed
  Gauge* in_flight = nullptr;  // requests this filter saw admitted that have not ended
};

class QueueWaitBudgetFilter final : public StreamFilter {
 public:
  explicit QueueWaitBudgetFilter(std::shared_ptr<QueueWaitBudgetShared> shared);

  // StreamFilter
  FilterStatus on_request(FilterCallbacks& callbacks) override;
  void on_waiting() override;
  void on_admitted() override;
  void on_complete(const RequestOutcome& outcome) override;

  // "8ms", "2.5ms", "250us", "1s": how a budget is named in messages.
  static std::string format_duration(Duration d);

 private:
  LocalReply make_reply() const;
  Criticality criticality() const { return callbacks_->request().criticality; }
  void on_expired();
  void stop_watching();

  std::shared_ptr<QueueWaitBudgetShared> shared_;
  FilterCallbacks* callbacks_ = nullptr;
  std::unique_ptr<Timer> timer_;
  TimePoint start_{};
  Duration budget_{};
  bool deadline_bound_ = false;  // the remaining deadline, not the configured budget, applies
  bool watching_ = false;        // not admitted yet, not shed
  bool waiting_ = false;         // a later filter stopped the chain: timed, counted in `queued`
  bool in_flight_ = false;
};

}  // namespace sluice
