#include "filters/queue_wait_budget/queue_wait_budget_filter.h"

#include <gtest/gtest.h>

#include "filters/queue_wait_budget/queue_wait_budget.h"
#include "filters/queue_wait_budget/queue_wait_budget_factory.h"
#include "tests/fakes/fake_filter_callbacks.h"
#include "tests/filters/stat_reader.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

class QueueWaitBudgetFilterTest : public ::testing::Test {
 protected:
  QueueWaitBudgetFilterTest() {
    QueueWaitBudgetConfig c;
    c.budget = 8ms;
    c.retry_pushback = 100ms;
    factory_ = std::make_unique<QueueWaitBudgetFactory>("ingress", "qwb", c, registry_, clock_);
    cb_.mutable_request().headers_complete = clock_.now();
  }
  double stat_of(const std::string& leaf) { return stat(registry_, "filter.ingress.qwb." + leaf); }
  // As the chain does when a later filter (a limiter) stops it: the request waits.
  FilterStatus wait() {
    const FilterStatus status = filter_->on_request(cb_);
    if (status == FilterStatus::Continue) filter_->on_waiting();
    return status;
  }

  FakeClock clock_;
  FakeDispatcher worker_{clock_, 0};
  StatsRegistry registry_;
  std::unique_ptr<QueueWaitBudgetFactory> factory_;
  FakeFilterCallbacks cb_{worker_};
  std::unique_ptr<StreamFilter> filter_ = nullptr;
};

TEST_F(QueueWaitBudgetFilterTest, LetsTheRequestOnAndStartsTimingWhenItWaits) {
  filter_ = factory_->create();
  EXPECT_EQ(filter_->on_request(cb_), FilterStatus::Continue);
  EXPECT_EQ(worker_.armed_timers(), 0u);  // admitted at once, most requests cost no timer
  EXPECT_EQ(stat_of("queued"), 0);
  filter_->on_waiting();
  EXPECT_EQ(worker_.armed_timers(), 1u);
  EXPECT_EQ(stat_of("queued"), 1);
  filter_->on_waiting();  // a second later filter stopping changes nothing
  EXPECT_EQ(worker_.armed_timers(), 1u);
  EXPECT_EQ(stat_of("queued"), 1);
}

TEST_F(QueueWaitBudgetFilterTest, AdmittedAtOnceArmsNoTimerAndCountsItsWait) {
  filter_ = factory_->create();
  filter_->on_request(cb_);
  filter_->on_admitted();
  EXPECT_EQ(worker_.armed_timers(), 0u);
  EXPECT_EQ(stat_of("queued"), 0);
  EXPECT_EQ(stat_of("admitted_total"), 1);
  EXPECT_EQ(stat_of("queue_wait_us"), 1);
  clock_.advance(1s);
  EXPECT_TRUE(cb_.rejects.empty());
  filter_->on_complete(RequestOutcome{});
  EXPECT_EQ(stat_of("in_flight"), 0);
}

TEST_F(QueueWaitBudgetFilterTest, WaitingAfterTheBudgetWasSpentShedsAtOnce) {
  // The later filters took the whole budget before stopping the chain.
  filter_ = factory_->create();
  filter_->on_request(cb_);
  clock_.advance(9ms);
  filter_->on_waiting();
  ASSERT_EQ(cb_.rejects.size(), 1u);
  EXPECT_EQ(cb_.rejects[0].reason, "budget");
  EXPECT_EQ(stat_of("queued"), 0);
  EXPECT_EQ(worker_.armed_timers(), 0u);
}

TEST_F(QueueWaitBudgetFilterTest, ShedsWithResourceExhaustedWhenNotAdmittedWithinTheBudget) {
  filter_ = factory_->create();
  wait();
  clock_.advance(7999us);
  EXPECT_TRUE(cb_.rejects.empty());
  clock_.advance(1us);
  ASSERT_EQ(cb_.rejects.size(), 1u);
  const LocalReply& r = cb_.rejects[0];
  EXPECT_EQ(r.grpc_status, GrpcStatus::ResourceExhausted);
  EXPECT_EQ(r.http_status, 503);
  EXPECT_EQ(r.message, "queue wait budget 8ms exceeded");
  EXPECT_EQ(r.retry_pushback, Duration(100ms));
  EXPECT_EQ(r.reason, "budget");
  EXPECT_EQ(stat_of("shed_total"), 1);
  EXPECT_EQ(stat_of("shed_budget_total"), 1);
  EXPECT_EQ(stat_of("queued"), 0);
  filter_->on_complete(RequestOutcome{});
  EXPECT_EQ(stat_of("queued"), 0);
}

TEST_F(QueueWaitBudgetFilterTest, AdmissionWithinTheBudgetStopsTheClock) {
  filter_ = factory_->create();
  wait();
  clock_.advance(7ms);
  filter_->on_admitted();
  clock_.advance(100ms);
  EXPECT_TRUE(cb_.rejects.empty());
  EXPECT_EQ(stat_of("admitted_total"), 1);
  EXPECT_EQ(stat_of("queued"), 0);
  EXPECT_EQ(stat_of("in_flight"), 1);
  RequestOutcome o;
  o.admitted = true;
  o.rtt = 100ms;
  filter_->on_complete(o);
  EXPECT_EQ(stat_of("in_flight"), 0);
  EXPECT_EQ(find_stat(registry_, "filter.ingress.qwb.queue_wait_us")->histogram.max, 7000u);
  EXPECT_EQ(stat_of("rtt_us"), 1);
}

TEST_F(QueueWaitBudgetFilterTest, RemainingDeadlineShorterThanTheBudgetBecomesTheBudget) {
  cb_.mutable_request().deadline = clock_.now() + 3ms;
  filter_ = factory_->create();
  wait();
  clock_.advance(3ms);
  ASSERT_EQ(cb_.rejects.size(), 1u);
  const LocalReply& r = cb_.rejects[0];
  EXPECT_EQ(r.grpc_status,
            GrpcStatus::DeadlineExceeded);  // DEADLINE_EXCEEDED: the caller's deadline has passed
  EXPECT_EQ(r.message,
            "queue wait budget 3ms (the caller's remaining deadline, less than the configured "
            "8ms) exceeded");
  EXPECT_FALSE(r.retry_pushback.has_value());  // retrying an expired call is pointless
  EXPECT_EQ(r.reason, "deadline");
  EXPECT_EQ(stat_of("shed_deadline_total"), 1);
  EXPECT_EQ(stat_of("shed_budget_total"), 0);
}

TEST_F(QueueWaitBudgetFilterTest, DeadlineLongerThanTheBudgetChangesNothing) {
  cb_.mutable_request().deadline = clock_.now() + 1s;
  filter_ = factory_->create();
  wait();
  clock_.advance(8ms);
  ASSERT_EQ(cb_.rejects.size(), 1u);
  EXPECT_EQ(cb_.rejects[0].message, "queue wait budget 8ms exceeded");
}

TEST_F(QueueWaitBudgetFilterTest, RequestWhoseDeadlineHasPassedIsShedAtOnce) {
  cb_.mutable_request().deadline = clock_.now() - 1ms;
  filter_ = factory_->create();
  EXPECT_EQ(filter_->on_request(cb_), FilterStatus::Stop);
  ASSERT_EQ(cb_.rejects.size(), 1u);
  EXPECT_EQ(cb_.rejects[0].grpc_status, GrpcStatus::DeadlineExceeded);
  EXPECT_EQ(worker_.armed_timers(), 0u);
  EXPECT_EQ(stat_of("queued"), 0);
}

TEST_F(QueueWaitBudgetFilterTest, TimeSpentBeforeReachingTheFilterCounts) {
  cb_.mutable_request().headers_complete = clock_.now() - 5ms;
  filter_ = factory_->create();
  wait();
  clock_.advance(2999us);
  EXPECT_TRUE(cb_.rejects.empty());
  clock_.advance(1us);
  EXPECT_EQ(cb_.rejects.size(), 1u);
}

TEST_F(QueueWaitBudgetFilterTest, RequestEndingWhileWaitingIsNeverRejectedLater) {
  filter_ = factory_->create();
  wait();
  clock_.advance(2ms);
  RequestOutcome reset;
  reset.reason = EndReason::ClientReset;
  filter_->on_complete(reset);
  clock_.advance(20ms);
  EXPECT_TRUE(cb_.rejects.empty());
  EXPECT_EQ(stat_of("queued"), 0);
  EXPECT_EQ(worker_.armed_timers(), 0u);
  EXPECT_EQ(stat_of("queue_wait_us"), 1);
}

TEST_F(QueueWaitBudgetFilterTest, CompleteWithoutOnRequestHoldsNothing) {
  filter_ = factory_->create();
  filter_->on_complete(RequestOutcome{});
  EXPECT_EQ(stat_of("queued"), 0);
  EXPECT_EQ(stat_of("in_flight"), 0);
}

TEST(QueueWaitBudgetFormatTest, NamesBudgetsTheWayConfigWritesThem) {
  EXPECT_EQ(QueueWaitBudgetFilter::format_duration(std::chrono::milliseconds(8)), "8ms");
  EXPECT_EQ(QueueWaitBudgetFilter::format_duration(std::chrono::microseconds(2500)), "2.5ms");
  EXPECT_EQ(QueueWaitBudgetFilter::format_duration(std::chrono::microseconds(250)), "250us");
  EXPECT_EQ(QueueWaitBudgetFilter::format_duration(std::chrono::seconds(2)), "2s");
  EXPECT_EQ(QueueWaitBudgetFilter::format_duration(std::chrono::milliseconds(1500)), "1500ms");
}

}  // namespace
}  // namespace sluice
