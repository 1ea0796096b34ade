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
  Req request(FakeDispatcher& worker, Criticality criticality = Criticality::Critical) {
    auto cb = std::make_unique<FakeFilterCallbacks>(worker);
    cb->mutable_request().criticality = criticality;
    cb->mutable_request().path = "/test.Service/Call";
    return Req{std::move(cb), factory_->create()};
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

TEST_F(LimiterFilterTest, FeedsLatencySamplesWhenTheAnswerBegins) {
  RttGradientConfig g;
  factory_ = build_limiter("rtt_gradient", "ingress", "rg", g, registry_, clock_);
  for (int i = 0; i < 12; ++i) {
    Req r = request(worker0_);
    r.filter->on_request(*r.cb);
    r.filter->on_admitted();
    clock_.advance(12ms);
    r.filter->on_response(ResponseStart{12ms, true, -1});
    clock_.advance(50ms);  // the stream stays open: its sample was taken at the first message
    r.filter->on_complete(ended(true, EndReason::Completed, 12ms));
  }
  worker0_.run_pending();  // the samples' flush
  auto snap = factory_->snapshot();
  EXPECT_DOUBLE_EQ(snap->rtt_noload_ms.value_or(0), 12.0);
  EXPECT_EQ(stat(registry_, "filter.ingress.rg.rtt_samples_total"), 12);
  EXPECT_DOUBLE_EQ(stat(registry_, "filter.ingress.rg.rtt_noload_ms"), 12.0);
  ASSERT_EQ(snap->baselines.size(), 1u);
  EXPECT_EQ(snap->baselines[0].method, "/test.Service/Call");
}

TEST_F(LimiterFilterTest, ErrorAnswersAndLocalRepliesAreNotLatencySamples) {
  RttGradientConfig g;
  factory_ = build_limiter("rtt_gradient", "ingress", "rg", g, registry_, clock_);
  Req fast_error = request(worker0_);
  fast_error.filter->on_request(*fast_error.cb);
  fast_error.filter->on_admitted();
  fast_error.filter->on_response(ResponseStart{1ms, false, 3});  // INVALID_ARGUMENT, trailers-only
  fast_error.filter->on_complete(ended(true, EndReason::Completed));
  Req unavailable = request(worker0_);
  unavailable.filter->on_request(*unavailable.cb);
  unavailable.filter->on_admitted();
  unavailable.filter->on_complete(ended(true, EndReason::UpstreamUnavailable));
  worker0_.run_pending();
  EXPECT_EQ(stat(registry_, "filter.ingress.rg.rtt_samples_total"), 0);
  EXPECT_EQ(stat(registry_, "filter.ingress.rg.rtt_excluded_error_total"), 1);
  EXPECT_EQ(stat(registry_, "filter.ingress.rg.rtt_excluded_local_total"), 1);
  EXPECT_FALSE(factory_->snapshot()->rtt_noload_ms);
}

TEST_F(LimiterFilterTest, StreamCountedUntilItsFirstMessageLetsGoOfItsPermitThen) {
  FixedSemaphoreConfig c;
  c.max_concurrency = 1;
  c.streams = {PermitRule{"/test.Service/*", PermitHold::FirstMessage}};
  factory_ = build_limiter("fixed_semaphore", "ingress", "fs", c, registry_, clock_);
  Req watch = request(worker0_);
  EXPECT_EQ(watch.filter->on_request(*watch.cb), FilterStatus::Continue);
  watch.filter->on_admitted();
  EXPECT_EQ(factory_->controller().gate().in_flight(), 1u);
  watch.filter->on_response(ResponseStart{5ms, true, -1});
  EXPECT_EQ(factory_->controller().gate().in_flight(), 0u);  // the stream idles without a permit
  Req next = request(worker0_);
  EXPECT_EQ(next.filter->on_request(*next.cb), FilterStatus::Continue);
  watch.filter->on_complete(ended(true, EndReason::Completed, 5ms));
  EXPECT_EQ(factory_->controller().gate().in_flight(), 1u);  // only `next`: none given back twice
  next.filter->on_complete(ended(false, EndReason::ClientReset));
}

TEST_F(LimiterFilterTest, MethodNotLimitedByTheFilterTakesNoPermit) {
  FixedSemaphoreConfig c;
  c.max_concurrency = 1;
  c.streams = {PermitRule{"/test.Service/Call", PermitHold::None}};
  factory_ = build_limiter("fixed_semaphore", "ingress", "fs", c, registry_, clock_);
  Req a = request(worker0_);
  Req b = request(worker0_);
  EXPECT_EQ(a.filter->on_request(*a.cb), FilterStatus::Continue);
  EXPECT_EQ(b.filter->on_request(*b.cb), FilterStatus::Continue);
  EXPECT_EQ(factory_->controller().gate().in_flight(), 0u);
  a.filter->on_complete(ended(true, EndReason::Completed));
  b.filter->on_complete(ended(true, EndReason::Completed));
}

TEST_F(LimiterFilterTest, AbandonedRequestLeavesTheQueueAtOnce) {
  Req a = request(worker0_);
  Req b = request(worker1_);
  a.filter->on_request(*a.cb);
  EXPECT_EQ(b.filter->on_request(*b.cb), FilterStatus::Stop);
  EXPECT_EQ(factory_->controller().gate().queued(), 1u);
  b.filter->on_abandoned();  // shed by a later filter, or its deadline: answered locally
  EXPECT_EQ(factory_->controller().gate().queued(), 0u);
  a.filter->on_complete(ended(true, EndReason::Completed));
  worker1_.run_pending();
  EXPECT_EQ(b.cb->resumes, 0);  // never granted a permit after it was answered
  EXPECT_EQ(factory_->controller().gate().in_flight(), 0u);
  b.filter->on_complete(ended(false, EndReason::Shed));
}

TEST_F(LimiterFilterTest, MoreCriticalArrivalEvictsTheLeastCriticalWaiterOfAFullQueue) {
  Req holder = request(worker0_);
  holder.filter->on_request(*holder.cb);
  Req batch = request(worker0_, Criticality::Sheddable);
  EXPECT_EQ(batch.filter->on_request(*batch.cb), FilterStatus::Stop);  // the one queue slot
  Req urgent = request(worker0_, Criticality::CriticalPlus);
  EXPECT_EQ(urgent.filter->on_request(*urgent.cb), FilterStatus::Stop);
  worker0_.run_pending();
  ASSERT_EQ(batch.cb->rejects.size(), 1u);
  EXPECT_EQ(batch.cb->rejects[0].reason, "evicted");
  EXPECT_EQ(stat(registry_, "filter.ingress.fs.sheddable.class_shed_total"), 1);
  holder.filter->on_complete(ended(true, EndReason::Completed));
  worker0_.run_pending();
  EXPECT_EQ(urgent.cb->resumes, 1);
  // A sheddable arrival finds nothing less critical queued: it is the one shed.
  Req late = request(worker0_, Criticality::Sheddable);
  Req late2 = request(worker0_, Criticality::Sheddable);
  late.filter->on_request(*late.cb);
  late2.filter->on_request(*late2.cb);
  ASSERT_EQ(late2.cb->rejects.size(), 1u);
  EXPECT_EQ(late2.cb->rejects[0].reason, "queue_full");
  urgent.filter->on_complete(ended(true, EndReason::Completed));
  worker0_.run_pending();
  late.filter->on_complete(ended(true, EndReason::Completed));
  late2.filter->on_complete(ended(false, EndReason::Shed));
  batch.filter->on_complete(ended(false, EndReason::Shed));
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
