#include "tools/loadgen/unary_call.h"

#include <boost/asio/post.hpp>
#include <utility>

namespace sluice::loadgen {

UnaryCall::UnaryCall(const CallSetup& setup, sluice::test::TestService::Stub& stub, bool fail,
                     CallDone done)
    : setup_(setup), stub_(stub), fail_(fail), done_(std::move(done)), request_(setup.request) {}

void UnaryCall::start() {
  prepare(setup_, ctx_);
  start_ = SteadyClock::now();
  auto on_status = [self = shared_from_this()](grpc::Status status) {
    const TimePoint end = SteadyClock::now();
    boost::asio::post(self->setup_.io, [self, status, end] { self->finish(status, end); });
  };
  if (fail_) {
    stub_.async()->Fail(&ctx_, &request_, &response_, std::move(on_status));
  } else {
    stub_.async()->Unary(&ctx_, &request_, &response_, std::move(on_status));
  }
}

void UnaryCall::finish(const grpc::Status& status, TimePoint end) {
  done_(result_of(status, ctx_, start_, end));
}

}  // namespace sluice::loadgen
