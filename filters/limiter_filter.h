// The per-request side of a limiter filter: takes a permit or waits for one, feeds the outcome
// to the algorithm, and gives the permit back exactly once.
#pragma once

#include <memory>

#include "filters/admission_controller.h"
#include "filters/filter.h"
#include "filters/limiter_config.h"
#include "filters/limiters/permit.h"
#include "filters/limiters/permit_wait.h"

namespace sluice {

class LimiterFilter final : public StreamFilter {
 public:
  // `rules` (the permit-hold rules and retry pushback of the chain the request started under)
  // must outlive the filter: its factory owns them.
  LimiterFilter(std::shared_ptr<AdmissionController> controller, const LimiterGateConfig& rules);
  ~LimiterFilter() override;
  LimiterFilter(const LimiterFilter&) = delete;
  LimiterFilter& operator=(const LimiterFilter&) = delete;

  // StreamFilter
  FilterStatus on_request(FilterCallbacks& callbacks) override;
  void on_admitted() override;
  void on_abandoned() override;
  void on_response(const ResponseStart& response) override;
  void on_complete(const RequestOutcome& outcome) override;

  // Whether an admitted request that ended without an RTT sample says the upstream is
  // overloaded. Client cancels do not (clients cancel for their own reasons, often), unless the
  // client's own deadline had passed: then it is a deadline that the client noticed first.
  static bool is_overload_drop(const RequestOutcome& outcome, const RequestInfo& request,
                               TimePoint now);

 private:
  void on_granted(Permit permit);
  // The permit is held: the call is unanswered for the estimator until end_ticket().
  void admitted();
  void end_ticket();
  // Sheds the request: the queue was full, or it was evicted from it.
  void reject(bool evicted);
  // Leaves the gate's queue if still in it.
  void leave_queue();

  std::shared_ptr<AdmissionController> controller_;
  const LimiterGateConfig& rules_;
  FilterCallbacks* callbacks_ = nullptr;
  Permit permit_;
  PermitWait wait_;
  TimePoint entered_{};
  bool answered_ = false;                // on_response() came: no drop at the end
  bool waited_ = false;                  // queued for its permit
  uint64_t ticket_ = 0;                  // AdmissionController::on_admitted's, until given back
  Dispatcher* ticket_worker_ = nullptr;  // the worker it was taken on
  PermitHold hold_ = PermitHold::End;
};

}  // namespace sluice
