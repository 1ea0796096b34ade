#include "src/admin/queues_render.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>

#include "src/queue/queue_consumer.h"
#include "src/queue/queue_stats.h"

namespace sluice {
namespace {

class QueuesRenderTest : public ::testing::Test {
 protected:
  boost::json::object render() {
    stats_ = registry_.snapshot();
    const QueueModeState state = QueueModeState::read(stats_, config_, limits_);
    // Through text, as the endpoint sends it.
    return boost::json::parse(boost::json::serialize(render_queues_json(state, recent_)))
        .as_object();
  }

  StatsRegistry registry_;
  queue::QueueStats work_{registry_, "work"};
  queue::ConsumerStats pull_{registry_, "pull"};
  boost::json::value config_ = boost::json::parse(R"({
      "queues": [{"name": "work", "redis": "127.0.0.1:6379", "stream": "sluice:work",
                  "group": "sluice", "max_pending": 500}],
      "consumers": [{"name": "pull", "queue": "work", "cluster": "app", "filters": []}]})");
  std::vector<LimiterSnapshot> limits_;
  std::vector<StatValue> stats_;
  QueueRecent recent_;
};

TEST_F(QueuesRenderTest, AQueueShowsTheGroupTheOutcomesAndRedis) {
  work_.backlog.set(40);
  work_.pending.set(3);
  work_.stream_length.set(43);
  work_.consumers.set(2);
  work_.frontend_rq_open.add(5);
  work_.drain_rate.set(10.5);
  work_.estimated_wait_ms.set(3809);
  work_.frontend_rq_ok_total.inc(100);
  work_.frontend_rq_backpressure_total.inc(4);
  work_.frontend_rq_backpressure_wait_total.inc(3);
  work_.frontend_rq_timeout_total.inc(2);
  work_.frontend_reply_decode_error_total.inc(1);
  work_.redis_used_memory_bytes.set(1048576);
  work_.redis_cpu_seconds.set(12.25);
  recent_.window_s = 10;
  recent_.redis_cpu_ratio = [](const std::string& q) -> std::optional<double> {
    if (q == "work") return 0.125;
    return std::nullopt;
  };
  const auto out = render();
  EXPECT_EQ(out.at("recent_window_s").to_number<double>(), 10.0);
  ASSERT_EQ(out.at("queues").as_array().size(), 1u);
  const auto& q = out.at("queues").as_array()[0].as_object();
  EXPECT_EQ(q.at("queue").as_string(), "work");
  EXPECT_EQ(q.at("redis").as_string(), "127.0.0.1:6379");
  EXPECT_EQ(q.at("stream").as_string(), "sluice:work");
  EXPECT_EQ(q.at("group").as_string(), "sluice");
  EXPECT_EQ(q.at("max_pending").as_int64(), 500);
  EXPECT_EQ(q.at("backlog").as_int64(), 40);
  EXPECT_EQ(q.at("pending").as_int64(), 3);
  EXPECT_EQ(q.at("stream_length").as_int64(), 43);
  EXPECT_EQ(q.at("consumers").as_int64(), 2);
  EXPECT_EQ(q.at("open").as_int64(), 5);
  EXPECT_DOUBLE_EQ(q.at("drain_rate").as_double(), 10.5);
  EXPECT_EQ(q.at("estimated_wait_ms").as_int64(), 3809);
  const auto& rq = q.at("requests").as_object();
  ASSERT_EQ(rq.size(), kQueueOutcomes.size());
  EXPECT_EQ(rq.at("ok").as_int64(), 100);
  EXPECT_EQ(rq.at("backpressure").as_int64(), 4);
  EXPECT_EQ(rq.at("timeout").as_int64(), 2);
  EXPECT_EQ(rq.at("enqueue_failed").as_int64(), 0);
  EXPECT_EQ(rq.at("too_large").as_int64(), 0);
  EXPECT_EQ(q.at("backpressure_wait").as_int64(), 3);
  EXPECT_EQ(q.at("reply_decode_errors").as_int64(), 1);
  EXPECT_TRUE(q.at("e2e_ms_recent").is_null());  // no history lookup: nothing recent
  const auto& redis = q.at("redis_info").as_object();
  EXPECT_EQ(redis.at("used_memory_bytes").as_int64(), 1048576);
  EXPECT_DOUBLE_EQ(redis.at("cpu_seconds").as_double(), 12.25);
  EXPECT_DOUBLE_EQ(redis.at("cpu_ratio_recent").as_double(), 0.125);
}

TEST_F(QueuesRenderTest, RedisIsUnknownUntilTheFirstInfoAnswer) {
  const auto out = render();
  const auto& redis = out.at("queues").as_array()[0].at("redis_info").as_object();
  EXPECT_TRUE(redis.at("used_memory_bytes").is_null());
  EXPECT_TRUE(redis.at("cpu_seconds").is_null());
  EXPECT_TRUE(redis.at("cpu_ratio_recent").is_null());
}

TEST_F(QueuesRenderTest, DurationsArePercentilesOfTheRecentWindowNotSinceStart) {
  // Since start: a slow second long ago. The recent window (what the history hands over): fast.
  for (int i = 0; i < 100; ++i) work_.frontend_rq_time_us.record(900'000);
  HistogramSnapshot window;
  {
    Histogram h;
    for (int i = 0; i < 99; ++i) h.record(2000);
    h.record(50'000);
    window = h.snapshot();
  }
  std::map<std::string, HistogramSnapshot> windows = {{"queue.work.frontend_rq_time_us", window}};
  recent_.histogram = [&windows](const std::string& dotted) -> const HistogramSnapshot* {
    const auto it = windows.find(dotted);
    return it == windows.end() ? nullptr : &it->second;
  };
  const auto out = render();
  const auto& e2e = out.at("queues").as_array()[0].at("e2e_ms_recent").as_object();
  EXPECT_EQ(e2e.at("count").as_int64(), 100);
  const auto bucket_ms = [](uint64_t us) {
    return static_cast<double>(Histogram::bucket_upper_bound(Histogram::bucket_index(us))) / 1000;
  };
  EXPECT_DOUBLE_EQ(e2e.at("p50").as_double(), bucket_ms(2000));
  EXPECT_DOUBLE_EQ(e2e.at("p90").as_double(), bucket_ms(2000));
  EXPECT_DOUBLE_EQ(e2e.at("p99").as_double(), bucket_ms(2000));
  EXPECT_DOUBLE_EQ(e2e.at("max").as_double(), 50.0);
  // The consumer's call time had nothing in the window.
  EXPECT_TRUE(out.at("consumers").as_array()[0].at("rq_time_ms_recent").is_null());
}

TEST_F(QueuesRenderTest, AConsumerShowsItsWindowCompletionsByStatusAndAdjustments) {
  pull_.consumer_rq_active.add(3);
  pull_.consumer_window.set(1);
  pull_.consumer_rq_total.inc(12);
  pull_.consumer_rq_completed_total.inc(10);
  for (int i = 0; i < 9; ++i) pull_.count_completed(0);
  pull_.count_completed(14);
  pull_.consumer_rq_expired_total.inc(2);
  LimiterSnapshot aimd;
  aimd.listener = "consumer:pull";
  aimd.filter = "aimd";
  aimd.type = "aimd";
  aimd.limit = 4;
  aimd.in_flight = 3;
  aimd.p99_ms = 41.5;
  limits_ = {aimd};
  registry_
      .counter(StatName{"filter",
                        {{"listener", "consumer:pull"}, {"filter", "aimd"}},
                        "limit_increase_total"},
               "")
      .inc(6);
  registry_
      .counter(StatName{"filter",
                        {{"listener", "consumer:pull"}, {"filter", "aimd"}},
                        "limit_decrease_total"},
               "")
      .inc(1);
  registry_.counter(StatName{"filter",
                             {{"listener", "consumer:pull"}, {"filter", "aimd"}},
                             "limit_fast_decrease_total"},
                    "");
  const auto out = render();
  ASSERT_EQ(out.at("consumers").as_array().size(), 1u);
  const auto& c = out.at("consumers").as_array()[0].as_object();
  EXPECT_EQ(c.at("consumer").as_string(), "pull");
  EXPECT_EQ(c.at("queue").as_string(), "work");
  EXPECT_EQ(c.at("cluster").as_string(), "app");
  EXPECT_EQ(c.at("limit").as_int64(), 4);
  EXPECT_EQ(c.at("in_flight").as_int64(), 3);
  EXPECT_EQ(c.at("window").as_int64(), 1);
  EXPECT_DOUBLE_EQ(c.at("p99_ms").as_double(), 41.5);
  EXPECT_EQ(c.at("read").as_int64(), 12);
  EXPECT_EQ(c.at("completed").as_int64(), 10);
  // Only the statuses that occurred, by name.
  EXPECT_EQ(boost::json::serialize(c.at("completed_by_status")), R"({"OK":9,"UNAVAILABLE":1})");
  EXPECT_EQ(c.at("expired").as_int64(), 2);
  EXPECT_EQ(c.at("dead_lettered").as_int64(), 0);
  EXPECT_EQ(boost::json::serialize(c.at("adjustments")),
            R"({"increase":6,"decrease":1,"fast_decrease":0})");
  ASSERT_EQ(c.at("limiters").as_array().size(), 1u);
  const auto& l = c.at("limiters").as_array()[0].as_object();
  EXPECT_EQ(l.at("filter").as_string(), "aimd");
  EXPECT_EQ(l.at("type").as_string(), "aimd");
  EXPECT_EQ(l.at("limit").as_int64(), 4);
  EXPECT_EQ(l.at("in_flight").as_int64(), 3);
  EXPECT_EQ(l.at("queued").as_int64(), 0);
}

TEST_F(QueuesRenderTest, AConsumerWithoutALimiterHasNoWindowAndNoAdjustments) {
  const auto out = render();
  const auto& c = out.at("consumers").as_array()[0].as_object();
  EXPECT_TRUE(c.at("limit").is_null());
  EXPECT_TRUE(c.at("p99_ms").is_null());
  EXPECT_TRUE(c.at("adjustments").is_null());
  EXPECT_TRUE(c.at("limiters").as_array().empty());
  EXPECT_TRUE(c.at("completed_by_status").as_object().empty());
}

TEST(QueuesRenderEmptyTest, WithoutQueueModeBothListsAreEmpty) {
  const auto out = render_queues_json(QueueModeState{}, QueueRecent{});
  EXPECT_EQ(boost::json::serialize(out), R"({"recent_window_s":0,"queues":[],"consumers":[]})");
}

}  // namespace
}  // namespace sluice
