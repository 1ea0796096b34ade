// FilterCallbacks for testing one filter on its own: records resume() and reject() calls.
#pragma once

#include <optional>
#include <vector>

#include "filters/filter.h"
#include "tests/fakes/fake_dispatcher.h"

namespace sluice {

class FakeFilterCallbacks final : public FilterCallbacks {
 public:
  explicit FakeFilterCallbacks(FakeDispatcher& dispatcher) : dispatcher_(dispatcher) {}

  // FilterCallbacks
  const RequestInfo& request() const override { return request_; }
  void resume() override { ++resumes; }
  void reject(LocalReply reply) override { rejects.push_back(std::move(reply)); }
  Dispatcher& dispatcher() override { return dispatcher_; }

  RequestInfo& mutable_request() { return request_; }
  const LocalReply* last_reject() const { return rejects.empty() ? nullptr : &rejects.back(); }

  int resumes = 0;
  std::vector<LocalReply> rejects;

 private:
  FakeDispatcher& dispatcher_;
  RequestInfo request_;
};

}  // namespace sluice
