#include "filters/limiter_filter.h"

#include <gtest/gtest.h>

#include "filters/limiter_filter_factory.h"
#include "tests/fakes/fake_filter_callbacks.h"
#include "tests/filters/build_limiter.h"
#include "tests/filters/stat_reader.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

RequestOutcome ended(bool admitted, EndReason reason, std::optional<Duration> rtt = std::nullopt) {
  RequestOutcome o;
  o.admitted = admitted;
  o.reason = reason;
  o.rtt = rtt;
  return o;
}

// One fixed_semaphore (1 permit, 1 queue slot) and requests on two workers.
class LimiterFilterTest : public ::testing::Test {
 protected:
  LimiterFilterTest() {
    FixedSemaphoreConfig c;
    c.max_concurrency = 1;
    c.max_queue = 1;
    c.retry_pushback = 250ms;
    factory_ = build_limiter("fixed_semaphore", "ingress", "fs", c, registry_, clock_);
  }
  // A filter for a request living on `worker`, with its callbacks.
  struct Req {
    std::unique_ptr<FakeFilterCallbacks> cb;
    std::unique_ptr<StreamFilter> filter;
  };
  Req request(FakeDispatcher& worker) {
    return Req{std::make_unique<FakeFilterCallbacks>(worker), factory_->create()};
  }
  double stat_of(const std::string& leaf) { return stat(registry_, "filter.ingress.fs." + leaf); }

  FakeClock clock_;
  FakeDispatcher worker0_{clock_, 0};
  FakeDispatcher worker1_{clock_, 1};
  StatsRegistry registry_;
  std::unique_ptr<LimiterFilterFactory> factory_;
};

TEST_F(LimiterFilterTest, ContinuesWhileAPermitIsFree) {
  Req a = request(worker0_);
  EXPECT_EQ(a.filter->on_request(*a.cb), FilterStatus::Continue);
  EXPECT_EQ(stat_of("in_flight"), 1);
  EXPECT_EQ(stat_of("queue_wait_us"), 1);  // one sample, of zero wait
}

TEST_F(LimiterFilterTest, HoldsARequestUntilAPermitFreesThenResumesItOnItsOwnWorker) {
  Req a = request(worker0_);
  Req b = request(worker1_);
  ASSERT_EQ(a.filter->on_request(*a.cb), FilterStatus::Continue);
  EXPECT_EQ(b.filter->on_request(*b.cb), FilterStatus::Stop);
  EXPECT_EQ(stat_of("queued"), 1);
  clock_.advance(3ms);
  a.filter->on_complete(ended(true, EndReason::Completed, 3ms));  // released on worker 0...
  EXPECT_EQ(b.cb->resumes, 0);
  EXPECT_EQ(worker1_.posted(), 1u);  // ...granted on worker 1
  worker1_.run_pending();
  EXPECT_EQ(b.cb->resumes, 1);
  EXPECT_EQ(stat_of("in_flight"), 1);
  EXPECT_EQ(stat_of("queued"), 0);
  auto wait = find_stat(registry_, "filter.ingress.fs.queue_wait_us");
  EXPECT_EQ(wait->histogram.max, 3000u);  // b waited 3 ms
}

TEST_F(LimiterFilterTest, ShedsAtOnceWithAClearMessageWhenTheQueueIsFull) {
  Req a = request(worker0_);
  Req b = request(worker0_);
  Req c = request(worker0_);
  a.filter->on_request(*a.cb);
  b.filter->on_request(*b.cb);
  EXPECT_EQ(c.filter->on_request(*c.cb), FilterStatus::Stop);
  ASSERT_EQ(c.cb->rejects.size(), 1u);
  const LocalReply& r = c.cb->rejects[0];
  EXPECT_EQ(r.grpc_status, GrpcStatus::ResourceExhausted);
  EXPECT_EQ(r.http_status, 503);
  EXPECT_EQ(r.message, "fs: queue full (1 waiting)");
  EXPECT_EQ(r.retry_pushback, Duration(250ms));
  EXPECT_EQ(r.reason, "queue_full");
  EXPECT_EQ(stat_of("shed_total"), 1);
  EXPECT_EQ(stat_of("shed_queue_full_total"), 1);
  c.filter->on_complete(ended(false, EndReason::Shed));
  EXPECT_EQ(stat_of("in_flight"), 1);
  EXPECT_EQ(stat_of("queued"), 1);
}

TEST_F(LimiterFilterTest, ClientResetWhileQueuedLeavesTheQueueForTheNextRequest) {
  Req a = request(worker0_);
  Req b = request(worker0_);
  a.filter->on_request(*a.cb);
  b.filter->on_request(*b.cb);
  b.filter->on_complete(ended(false, EndReason::ClientReset));
  EXPECT_EQ(stat_of("queued"), 0);
  Req c = request(worker0_);
  EXPECT_EQ(c.filter->on_request(*c.cb), FilterStatus::Stop);  // the freed slot is usable
  a.filter->on_complete(ended(true, EndReason::Completed, 1ms));
  worker0_.run_pending();
  EXPECT_EQ(b.cb->resumes, 0);
  EXPECT_EQ(c.cb->resumes, 1);
}

TEST_F(LimiterFilterTest, GrantArrivingAfterTheRequestEndedGoesToTheNextWaiter) {
  FixedSemaphoreConfig cfg;
  cfg.max_concurrency = 1;
  cfg.max_queue = 10;
  factory_ = build_limiter("fixed_semaphore", "ingress", "fs2", cfg, registry_, clock_);
  Req a = request(worker0_);
  Req b = request(worker1_);
  Req c = request(worker0_);
  a.filter->on_request(*a.cb);
  b.filter->on_request(*b.cb);
  c.filter->on_request(*c.cb);
  a.filter->on_complete(ended(true, EndReason::Completed, 1ms));     // grant to b is posted
  b.filter->on_complete(ended(false, EndReason::DeadlineExceeded));  // b's deadline won the race
  clock_.run_pending();
  EXPECT_EQ(b.cb->resumes, 0);
  EXPECT_EQ(c.cb->resumes, 1);
  EXPECT_EQ(stat(registry_, "filter.ingress.fs2.in_flight"), 1);
}

class LimiterFilterEndTest : public LimiterFilterTest,
                             public ::testing::WithParamInterface<EndReason> {};

TEST_P(LimiterFilterEndTest, AdmittedRequestGivesItsPermitBackExactlyOnceHoweverItEnds) {
  Req a = request(worker0_);
  Req b = request(worker0_);
  a.filter->on_request(*a.cb);
  a.filter->on_admitted();
  b.filter->on_request(*b.cb);
  a.filter->on_complete(ended(true, GetParam(), std::nullopt));
  worker0_.run_pending();
  EXPECT_EQ(b.cb->resumes, 1);  // a's permit went to b...
  EXPECT_EQ(stat_of("in_flight"), 1);
  a.filter.reset();  // ...and destroying a gives nothing back a second time
  EXPECT_EQ(stat_of("in_flight"), 1);
  b.filter->on_complete(ended(true, EndReason::Completed, 1ms));
  EXPECT_EQ(stat_of("in_flight"), 0);
}

INSTANTIATE_TEST_SUITE_P(Ends, LimiterFilterEndTest,
                         ::testing::Values(EndReason::Completed, EndReason::ClientReset,
                                           EndReason::DeadlineExceeded,
                                           EndReason::UpstreamUnavailable, EndReason::UpstreamReset,
                                           EndReason::Drained, EndReason::Internal),
                         [](const auto& param_info) {
                           return std::string(to_string(param_info.param));
                         });

TEST_F(LimiterFilterTest, PermitTakenByARequestThatALaterFilterShedIsGivenBack) {
  Req a = request(worker0_);
  a.filter->on_request(*a.cb);
  a.filter->on_complete(ended(false, EndReason::Shed));
  EXPECT_EQ(stat_of("in_flight"), 0);
  EXPECT_EQ(stat_of("rtt_us"), 0);  // no sample from a request that never went upstream
}

TEST_F(LimiterFilterTest, DestroyedWithoutOnCompleteStillLeavesTheQueueAndFreesItsPermit) {
  Req a = request(worker0_);
  Req b = request(worker0_);
  a.filter->on_request(*a.cb);
  b.filter->on_request(*b.cb);
  b.filter.reset();
  EXPECT_EQ(stat_of("queued"), 0);
  a.filter.reset();
  EXPECT_EQ(stat_of("in_flight"), 0);
}

TEST_F(LimiterFilterTest, CountsAdmittedOnlyWhenTheRequestReallyGoesUpstream) {
  Req a = request(worker0_);
  a.filter->on_request(*a.cb);
  EXPECT_EQ(stat_of("admitted_total"), 0);
  a.filter->on_admitted();
  EXPECT_EQ(stat_of("admitted_total"), 1);
}

TEST_F(LimiterFilterTest, FeedsRttSamplesToTheAlgorithm) {
  RttGradientConfig g;
  factory_ = build_limiter("rtt_gradient", "ingress", "rg", g, registry_, clock_);
  for (int i = 0; i < 3; ++i) {
    Req r = request(worker0_);
    r.filter->on_request(*r.cb);
    r.filter->on_admitted();
    clock_.advance(60ms);  // each sample closes the previous update interval
    r.filter->on_complete(ended(true, EndReason::Completed, 12ms));
  }
  auto snap = factory_->snapshot();
  EXPECT_DOUBLE_EQ(snap->rtt_noload_ms.value_or(0), 12.0);
  EXPECT_DOUBLE_EQ(snap->rtt_smoothed_ms.value_or(0), 12.0);
  EXPECT_EQ(stat(registry_, "filter.ingress.rg.rtt_us"), 3);
  EXPECT_DOUBLE_EQ(stat(registry_, "filter.ingress.rg.rtt_noload_ms"), 12.0);
}

TEST(LimiterFilterDropTest, OverloadEndsAreDropsButOrdinaryClientCancelsAreNot) {
  const TimePoint now = TimePoint{} + 1h;
  RequestInfo no_deadline;
  RequestInfo expired;
  expired.deadline = now - 1ms;
  RequestInfo pending;
  pending.deadline = now + 1s;
  auto drop = [&](EndReason r, const RequestInfo& info) {
    return LimiterFilter::is_overload_drop(ended(true, r), info, now);
  };
  EXPECT_TRUE(drop(EndReason::DeadlineExceeded, no_deadline));
  EXPECT_TRUE(drop(EndReason::UpstreamReset, no_deadline));
  EXPECT_TRUE(drop(EndReason::ClientReset, expired));
  EXPECT_FALSE(drop(EndReason::ClientReset, pending));
  EXPECT_FALSE(drop(EndReason::ClientReset, no_deadline));
  EXPECT_FALSE(drop(EndReason::UpstreamUnavailable, no_deadline));
  EXPECT_FALSE(drop(EndReason::Drained, no_deadline));
  EXPECT_FALSE(drop(EndReason::Completed, no_deadline));
}

}  // namespace
}  // namespace sluice
