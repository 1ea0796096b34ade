// One simulated request: plays the proxy's stream for the filter chain (ChainCallbacks), sends
// itself to the SimUpstream when admitted, and ends the chain like the proxy would.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include "filters/active_chain.h"
#include "filters/filter_chain.h"
#include "tests/fakes/fake_dispatcher.h"
#include "tests/filters/sim/sim_run.h"

namespace sluice {

class SimRequest final : public ChainCallbacks {
 public:
  SimRequest(SimRun& run, size_t id, FakeDispatcher& dispatcher, FilterChain& chain);

  void start();

  // ChainCallbacks
  const RequestInfo& request() const override { return info_; }
  Dispatcher& dispatcher() override { return dispatcher_; }
  FakeDispatcher& worker() { return dispatcher_; }
  void admit() override;
  void shed(const LocalReply& reply, int filter_index) override;

 private:
  void end(const RequestOutcome& outcome);
  void finish_ok(Duration rtt);

  SimRun& run_;
  const size_t id_;
  FakeDispatcher& dispatcher_;
  RequestInfo info_;
  ActiveChain chain_;
  SimRecord record_;
  TimePoint admitted_at_{};
  size_t method_ = 0;
  std::optional<Duration> service_;
  std::unique_ptr<Timer> tail_timer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice
