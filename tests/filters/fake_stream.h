// Plays the proxy's stream for one request through a real FilterChain: starts the ActiveChain,
// records admit()/shed(), and ends the request the way the proxy would.
#pragma once

#include <optional>

#include "filters/active_chain.h"
#include "filters/filter_chain.h"
#include "tests/fakes/fake_dispatcher.h"

namespace sluice {

class FakeStream final : public ChainCallbacks {
 public:
  FakeStream(FilterChain& chain, FakeDispatcher& dispatcher);

  // Edit before start(); headers_complete defaults to the time of start().
  RequestInfo& info() { return info_; }
  void start();
  // Ends the request. An admitted request that Completed gets an RTT sample of the time since
  // admission; every other end has none.
  void finish(EndReason reason, int grpc_status = 0);

  // ChainCallbacks
  const RequestInfo& request() const override { return info_; }
  Dispatcher& dispatcher() override { return dispatcher_; }
  void admit() override;
  void shed(const LocalReply& reply, int filter_index) override;

  ActiveChain& chain() { return chain_; }
  bool admitted() const { return admitted_at_.has_value(); }
  bool shed() const { return shed_reply_.has_value(); }
  const std::optional<LocalReply>& shed_reply() const { return shed_reply_; }
  int shed_index() const { return shed_index_; }
  int admit_calls() const { return admit_calls_; }
  int shed_calls() const { return shed_calls_; }

 private:
  FakeDispatcher& dispatcher_;
  RequestInfo info_;
  ActiveChain chain_;
  std::optional<TimePoint> admitted_at_;
  std::optional<LocalReply> shed_reply_;
  int shed_index_ = -1;
  int admit_calls_ = 0;
  int shed_calls_ = 0;
};

}  // namespace sluice
