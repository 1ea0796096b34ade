#include "src/admin/queue_mode_state.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "filters/aimd/aimd.h"
#include "filters/filter_chain.h"
#include "filters/fixed_semaphore/fixed_semaphore.h"
#include "src/queue/queue_consumer.h"
#include "src/queue/queue_stats.h"
#include "tests/fakes/fake_clock.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

// The stats are the queue's and the consumer's own (queue::QueueStats, queue::ConsumerStats) and
// a real filter chain's, so the leaves the admin reads are the ones queue mode publishes.
class QueueModeStateTest : public ::testing::Test {
 protected:
  QueueModeState read() {
    stats_ = registry_.snapshot();
    return QueueModeState::read(stats_, config_, limits_);
  }

  StatsRegistry registry_;
  boost::json::value config_ = boost::json::parse(R"({
      "listeners": [],
      "queues": [{"name": "work", "redis": "127.0.0.1:6379", "stream": "sluice:work",
                  "group": "workers", "max_pending": 500},
                 {"name": "batch", "redis": "10.0.0.1:6379", "stream": "b", "group": "sluice",
                  "max_pending": 10000}],
      "consumers": [{"name": "pull", "queue": "work", "cluster": "app", "filters": []},
                    {"name": "plain", "queue": "batch", "cluster": "app", "filters": []}]})");
  std::vector<LimiterSnapshot> limits_;
  std::vector<StatValue> stats_;
};

TEST_F(QueueModeStateTest, QueuesAndConsumersFollowTheConfigurationWithTheirStats) {
  queue::QueueStats batch(registry_, "batch");  // registered first: the config decides order
  queue::QueueStats work(registry_, "work");
  queue::ConsumerStats pull(registry_, "pull");
  work.backlog.set(42);
  work.frontend_rq_ok_total.inc(7);
  work.drain_rate.set(12.5);
  work.frontend_rq_time_us.record(3000);
  pull.consumer_rq_active.add(3);
  const QueueModeState s = read();
  ASSERT_EQ(s.queues.size(), 2u);
  EXPECT_EQ(s.queues[0].name, "work");
  EXPECT_EQ(s.queues[0].redis, "127.0.0.1:6379");
  EXPECT_EQ(s.queues[0].stream, "sluice:work");
  EXPECT_EQ(s.queues[0].group, "workers");
  EXPECT_EQ(s.queues[0].max_pending, 500.0);
  EXPECT_EQ(s.queues[0].stats.number("backlog"), 42.0);
  EXPECT_EQ(s.queues[0].stats.number("frontend_rq_ok_total"), 7.0);
  EXPECT_EQ(s.queues[0].stats.number("drain_rate"), 12.5);
  EXPECT_EQ(s.queues[0].stats.number("stream_length"), 0.0);
  ASSERT_NE(s.queues[0].stats.histogram("frontend_rq_time_us"), nullptr);
  EXPECT_EQ(s.queues[0].stats.histogram("frontend_rq_time_us")->histogram.count, 1u);
  EXPECT_FALSE(s.queues[0].stats.number("frontend_rq_time_us"));  // a histogram, not a number
  EXPECT_EQ(s.queues[0].stats.histogram("backlog"), nullptr);
  EXPECT_EQ(s.queues[1].name, "batch");
  EXPECT_EQ(s.queues[1].stats.number("backlog"), 0.0);
  for (const char* outcome : kQueueOutcomes) {
    EXPECT_TRUE(s.queues[0].stats.number(std::string("frontend_rq_") + outcome + "_total"))
        << outcome;
  }
  ASSERT_EQ(s.consumers.size(), 2u);
  EXPECT_EQ(s.consumers[0].name, "pull");
  EXPECT_EQ(s.consumers[0].queue, "work");
  EXPECT_EQ(s.consumers[0].cluster, "app");
  EXPECT_EQ(s.consumers[0].stats.number("consumer_rq_active"), 3.0);
  EXPECT_TRUE(s.consumers[0].stats.number("consumer_rq_completed_grpc_status_16_total"));
  // A configured consumer whose stats are not there (yet): listed, with nothing to show.
  EXPECT_EQ(s.consumers[1].name, "plain");
  EXPECT_TRUE(s.consumers[1].stats.empty());
  EXPECT_FALSE(s.consumers[1].limit());
}

TEST_F(QueueModeStateTest, AConsumersWindowIsItsSmallestLimitAndItsAdjustmentsTheSumOfItsFilters) {
  FakeClock clock;
  AimdConfig aimd;
  aimd.latency_slo = 100ms;
  FixedSemaphoreConfig fs;
  fs.max_concurrency = 4;
  auto chain = make_filter_chain(
      {FilterConfig{"aimd", "aimd", aimd}, FilterConfig{"cap", "fixed_semaphore", fs}},
      consumer_listener("pull"), registry_, clock);
  queue::ConsumerStats pull(registry_, "pull");
  for (LimiterSnapshot& l : chain->snapshots()) {
    l.listener = consumer_listener("pull");  // as QueueMode::append_limits names them
    limits_.push_back(std::move(l));
  }
  limits_[0].p99_ms = 41.5;
  LimiterSnapshot other;  // a listener's limiter: not the consumer's
  other.listener = "ingress";
  other.limit = 1;
  limits_.push_back(other);
  // What the aimd filter counted: its own counters (registering a name again returns them).
  registry_
      .counter(StatName{"filter",
                        {{"listener", "consumer:pull"}, {"filter", "aimd"}},
                        "limit_increase_total"},
               "")
      .inc(5);
  registry_
      .counter(StatName{"filter",
                        {{"listener", "consumer:pull"}, {"filter", "aimd"}},
                        "limit_fast_decrease_total"},
               "")
      .inc(2);
  const QueueModeState s = read();
  ASSERT_EQ(s.consumers.size(), 2u);
  const QueueModeState::Consumer& c = s.consumers[0];
  ASSERT_EQ(c.limiters.size(), 2u);
  EXPECT_EQ(c.limiters[0]->filter, "aimd");
  EXPECT_EQ(c.limiters[1]->filter, "cap");
  EXPECT_EQ(c.limit(), 4.0);  // aimd starts at 10; the semaphore's 4 bounds the reads
  EXPECT_EQ(c.limiter_p99_ms(), 41.5);
  EXPECT_EQ(c.adjustments[0], 5.0);  // increase
  EXPECT_EQ(c.adjustments[1], 0.0);  // decrease: registered by the aimd filter, none yet
  EXPECT_EQ(c.adjustments[2], 2.0);  // fast_decrease
  // No adaptive limiter, no adjustments to count.
  EXPECT_FALSE(s.consumers[1].adjustments[0]);
}

TEST_F(QueueModeStateTest, WithoutTheConfigurationsListsTheStatsDecideSorted) {
  queue::QueueStats z(registry_, "zeta");
  queue::QueueStats a(registry_, "alpha");
  queue::ConsumerStats c(registry_, "pull");
  config_ = boost::json::parse(R"({"workers": 2})");
  const QueueModeState s = read();
  ASSERT_EQ(s.queues.size(), 2u);
  EXPECT_EQ(s.queues[0].name, "alpha");
  EXPECT_EQ(s.queues[0].stream, "");
  EXPECT_FALSE(s.queues[0].max_pending);
  EXPECT_EQ(s.queues[1].name, "zeta");
  ASSERT_EQ(s.consumers.size(), 1u);
  EXPECT_EQ(s.consumers[0].name, "pull");
  EXPECT_EQ(s.consumers[0].queue, "");
}

TEST_F(QueueModeStateTest, NoQueueModeIsEmpty) {
  registry_.counter(StatName{"listener", {{"listener", "ingress"}}, "downstream_rq_total"}, "");
  config_ = boost::json::parse(R"({"listeners": [], "queues": [], "consumers": []})");
  EXPECT_TRUE(read().empty());
  config_ = nullptr;  // a hook that threw
  EXPECT_TRUE(read().empty());
}

}  // namespace
}  // namespace sluice
