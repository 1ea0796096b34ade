#include "filters/filter_chain.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "filters/aimd/aimd.h"
#include "filters/fixed_semaphore/fixed_semaphore.h"
#include "filters/queue_wait_budget/queue_wait_budget.h"
#include "filters/rtt_gradient/rtt_gradient.h"
#include "tests/filters/fake_stream.h"
#include "tests/filters/stat_reader.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

FilterConfig budget_config(Duration budget) {
  QueueWaitBudgetConfig c;
  c.budget = budget;
  return FilterConfig{"queue_wait_budget", "queue_wait_budget", c};
}

FilterConfig semaphore_config(uint32_t n, uint32_t max_queue = 1000) {
  FixedSemaphoreConfig c;
  c.max_concurrency = n;
  c.max_queue = max_queue;
  return FilterConfig{"fixed_semaphore", "fixed_semaphore", c};
}

TEST(FilterChainBuildTest, BuildsOneFilterPerConfigInOrder) {
  FakeClock clock;
  StatsRegistry registry;
  AimdConfig aimd;
  aimd.latency_slo = 30ms;
  auto chain = make_filter_chain({budget_config(8ms), semaphore_config(2),
                                  FilterConfig{"adaptive", "rtt_gradient", RttGradientConfig{}},
                                  FilterConfig{"", "aimd", aimd}},
                                 "ingress", registry, clock);
  ASSERT_EQ(chain->size(), 4u);
  EXPECT_EQ(chain->listener_name(), "ingress");
  EXPECT_EQ(chain->factory(0).type(), "queue_wait_budget");
  EXPECT_EQ(chain->factory(1).name(), "fixed_semaphore");
  EXPECT_EQ(chain->factory(2).name(), "adaptive");
  EXPECT_EQ(chain->factory(2).type(), "rtt_gradient");
  EXPECT_EQ(chain->factory(3).name(), "aimd");  // unnamed: the type
}

TEST(FilterChainBuildTest, RejectsAnUnknownTypeOrParametersOfAnotherType) {
  FakeClock clock;
  StatsRegistry registry;
  EXPECT_THROW(make_filter_chain({FilterConfig{"x", "token_bucket", FixedSemaphoreConfig{}}}, "l",
                                 registry, clock),
               std::invalid_argument);
  EXPECT_THROW(
      make_filter_chain({FilterConfig{"x", "aimd", FixedSemaphoreConfig{}}}, "l", registry, clock),
      std::invalid_argument);
}

TEST(FilterChainBuildTest, SnapshotsCoverTheLimiterFiltersAndNameTheListener) {
  FakeClock clock;
  StatsRegistry registry;
  auto chain =
      make_filter_chain({budget_config(8ms), semaphore_config(2)}, "ingress", registry, clock);
  auto snaps = chain->snapshots();
  ASSERT_EQ(snaps.size(), 1u);
  EXPECT_EQ(snaps[0].listener, "ingress");
  EXPECT_EQ(snaps[0].filter, "fixed_semaphore");
  EXPECT_EQ(snaps[0].type, "fixed_semaphore");
  EXPECT_EQ(snaps[0].limit, 2u);
  EXPECT_FALSE(snaps[0].gradient.has_value());
}

TEST(FilterChainBuildTest, RegistersTheDocumentedStatNames) {
  FakeClock clock;
  StatsRegistry registry;
  AimdConfig aimd;
  aimd.latency_slo = 30ms;
  make_filter_chain({budget_config(8ms), semaphore_config(2),
                     FilterConfig{"rtt_gradient", "rtt_gradient", RttGradientConfig{}},
                     FilterConfig{"aimd", "aimd", aimd}},
                    "ingress", registry, clock);
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"queue_wait_budget",
       {"admitted_total", "shed_total", "shed_budget_total", "shed_deadline_total", "in_flight",
        "queued", "queue_wait_us", "rtt_us"}},
      {"fixed_semaphore",
       {"admitted_total", "shed_total", "shed_queue_full_total", "in_flight", "queued", "limit",
        "queue_wait_us", "rtt_us"}},
      {"rtt_gradient",
       {"admitted_total", "shed_total", "shed_queue_full_total", "in_flight", "queued", "limit",
        "queue_wait_us", "rtt_us", "limit_changes_total", "limit_increase_total",
        "limit_decrease_total", "limit_fast_decrease_total", "rtt_noload_ms", "rtt_smoothed_ms",
        "gradient"}},
      {"aimd",
       {"admitted_total", "shed_total", "shed_queue_full_total", "in_flight", "queued", "limit",
        "queue_wait_us", "rtt_us", "limit_changes_total", "limit_increase_total",
        "limit_decrease_total", "limit_fast_decrease_total", "p99_ms"}},
  };
  for (const auto& [filter, leaves] : expected) {
    for (const std::string& leaf : leaves) {
      EXPECT_TRUE(find_stat(registry, "filter.ingress." + filter + "." + leaf).has_value())
          << filter << "." << leaf;
    }
  }
  auto limit = find_stat(registry, "filter.ingress.rtt_gradient.limit");
  EXPECT_EQ(limit->name.prometheus_labels(), "{listener=\"ingress\",filter=\"rtt_gradient\"}");
  EXPECT_EQ(limit->number, 20);
}

// Requests through a real chain [queue_wait_budget 8ms, fixed_semaphore 1 (queue 2)], on two
// workers: every way a request can end leaves nothing held behind.
class FilterChainFlowTest : public ::testing::Test {
 protected:
  FilterChainFlowTest()
      : chain_(make_filter_chain({budget_config(8ms), semaphore_config(1, 2)}, "ingress", registry_,
                                 clock_)) {}

  std::unique_ptr<FakeStream> start(FakeDispatcher& worker) {
    auto s = std::make_unique<FakeStream>(*chain_, worker);
    s->start();
    return s;
  }
  double stat_of(const std::string& name) { return stat(registry_, "filter.ingress." + name); }
  void expect_nothing_held() {
    EXPECT_EQ(stat_of("fixed_semaphore.in_flight"), 0);
    EXPECT_EQ(stat_of("fixed_semaphore.queued"), 0);
    EXPECT_EQ(stat_of("queue_wait_budget.in_flight"), 0);
    EXPECT_EQ(stat_of("queue_wait_budget.queued"), 0);
    EXPECT_EQ(worker0_.armed_timers() + worker1_.armed_timers(), 0u);
  }

  FakeClock clock_;
  FakeDispatcher worker0_{clock_, 0};
  FakeDispatcher worker1_{clock_, 1};
  StatsRegistry registry_;
  std::unique_ptr<FilterChain> chain_;
};

TEST_F(FilterChainFlowTest, AdmitsAtOnceWhenThereIsRoom) {
  auto a = start(worker0_);
  EXPECT_TRUE(a->admitted());
  clock_.advance(20ms);
  a->finish(EndReason::Completed);
  EXPECT_EQ(stat_of("fixed_semaphore.admitted_total"), 1);
  EXPECT_EQ(stat_of("queue_wait_budget.admitted_total"), 1);
  EXPECT_EQ(find_stat(registry_, "filter.ingress.fixed_semaphore.rtt_us")->histogram.max, 20000u);
  expect_nothing_held();
}

TEST_F(FilterChainFlowTest, QueuedRequestIsShedWhenItsBudgetRunsOut) {
  auto a = start(worker0_);
  auto b = start(worker1_);
  EXPECT_FALSE(b->admitted());
  clock_.advance(8ms);
  ASSERT_TRUE(b->shed());
  EXPECT_EQ(b->shed_index(), 0);
  EXPECT_EQ(b->shed_reply()->grpc_status, GrpcStatus::ResourceExhausted);
  EXPECT_EQ(b->shed_reply()->message, "queue wait budget 8ms exceeded");
  b->finish(EndReason::Shed);
  EXPECT_EQ(stat_of("fixed_semaphore.queued"), 0);  // the shed request left the queue
  a->finish(EndReason::Completed);
  clock_.run_pending();
  EXPECT_EQ(b->admit_calls(), 0);  // never admitted after being shed
  expect_nothing_held();
}

TEST_F(FilterChainFlowTest, PermitReleasedOnOneWorkerAdmitsTheWaiterOnTheOther) {
  auto a = start(worker0_);
  auto b = start(worker1_);
  clock_.advance(5ms);
  a->finish(EndReason::Completed);
  EXPECT_FALSE(b->admitted());  // the grant is on its way to worker 1
  worker1_.run_pending();
  EXPECT_TRUE(b->admitted());
  clock_.advance(10ms);  // past b's budget: admitted in time, so the budget no longer applies
  EXPECT_FALSE(b->shed());
  b->finish(EndReason::Completed);
  expect_nothing_held();
}

TEST_F(FilterChainFlowTest, QueueFullIsShedByTheSemaphoreAtOnce) {
  auto a = start(worker0_);
  auto b = start(worker0_);
  auto c = start(worker0_);
  auto d = start(worker0_);
  ASSERT_TRUE(d->shed());
  EXPECT_EQ(d->shed_index(), 1);
  EXPECT_EQ(d->shed_reply()->message, "fixed_semaphore: queue full (2 waiting)");
  EXPECT_EQ(stat_of("fixed_semaphore.shed_queue_full_total"), 1);
  d->finish(EndReason::Shed);
  for (auto* s : {b.get(), c.get()}) s->finish(EndReason::ClientReset);
  a->finish(EndReason::Completed);
  expect_nothing_held();
}

TEST_F(FilterChainFlowTest, ClientResetWhileQueuedReleasesEverything) {
  auto a = start(worker0_);
  auto b = start(worker1_);
  clock_.advance(2ms);
  b->finish(EndReason::ClientReset);
  clock_.advance(20ms);
  EXPECT_FALSE(b->shed());  // its budget timer died with it
  a->finish(EndReason::Completed);
  clock_.run_pending();
  EXPECT_FALSE(b->admitted());
  expect_nothing_held();
}

TEST_F(FilterChainFlowTest, DeadlineShorterThanTheBudgetIsAnsweredWithoutReachingTheUpstream) {
  auto a = start(worker0_);
  auto b = std::make_unique<FakeStream>(*chain_, worker1_);
  b->info().deadline = clock_.now() + 3ms;
  b->start();
  clock_.advance(3ms);
  ASSERT_TRUE(b->shed());
  EXPECT_EQ(b->shed_reply()->grpc_status, GrpcStatus::DeadlineExceeded);
  b->finish(EndReason::Shed);
  a->finish(EndReason::Completed);
  clock_.run_pending();
  EXPECT_EQ(b->admit_calls(), 0);
  EXPECT_EQ(stat_of("queue_wait_budget.shed_deadline_total"), 1);
  expect_nothing_held();
}

TEST_F(FilterChainFlowTest, DrainEndsQueuedAndAdmittedRequestsAndReleasesEverything) {
  auto a = start(worker0_);
  auto b = start(worker1_);
  b->finish(EndReason::Drained);
  a->finish(EndReason::Drained);
  clock_.run_pending();
  expect_nothing_held();
}

TEST_F(FilterChainFlowTest, UpstreamFailureGivesThePermitToTheNextRequest) {
  auto a = start(worker0_);
  auto b = start(worker0_);
  a->finish(EndReason::UpstreamUnavailable, 14);
  worker0_.run_pending();
  EXPECT_TRUE(b->admitted());
  b->finish(EndReason::UpstreamReset);
  expect_nothing_held();
}

}  // namespace
}  // namespace sluice
