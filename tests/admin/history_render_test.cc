#include "src/admin/history_render.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "src/admin/stats_render.h"
#include "src/queue/queue_consumer.h"
#include "src/queue/queue_stats.h"
#include "tests/admin/fake_admin_hooks.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kStartMs = 1'714'566'896'000;

class HistoryRenderTest : public ::testing::Test {
 protected:
  HistoryRenderTest() : sampler_(registry_, hooks_) {}

  // Sample k is taken k seconds after the start (steady and wall alike).
  void sample(int k) {
    sampler_.sample(TimePoint{} + 1h + std::chrono::seconds(k),
                    std::chrono::system_clock::time_point(std::chrono::milliseconds(kStartMs)) +
                        std::chrono::seconds(k));
  }
  boost::json::object render(std::optional<int64_t> since = std::nullopt) {
    const std::string text = render_history_json(sampler_, since);
    EXPECT_EQ(text.back(), '\n');
    return boost::json::parse(text).as_object();
  }
  static LimiterSnapshot limiter(const std::string& filter, const std::string& type,
                                 uint32_t limit) {
    LimiterSnapshot s;
    s.listener = "ingress";
    s.filter = filter;
    s.type = type;
    s.limit = limit;
    return s;
  }
  static std::vector<std::string> as_text(const boost::json::value& array) {
    std::vector<std::string> out;
    for (const auto& v : array.as_array()) {
      out.push_back(v.is_null() ? "null" : format_number(v.to_number<double>()));
    }
    return out;
  }

  StatsRegistry registry_;
  FakeAdminHooks hooks_;
  HistorySampler sampler_;
};

TEST_F(HistoryRenderTest, EverySeriesIsOneArrayAlignedWithTheTimestamps) {
  Counter& admitted = registry_.counter(
      StatName{"filter", {{"listener", "ingress"}, {"filter", "vegas"}}, "admitted_total"}, "");
  Counter& completed = registry_.counter(
      StatName{"listener", {{"listener", "ingress"}}, "downstream_rq_completed_total"}, "");
  LimiterSnapshot vegas = limiter("vegas", "rtt_gradient", 20);
  vegas.gradient = 0.1;  // as a float, 0.100000001: rendered as 0.1
  hooks_.limits_ = {vegas};
  sample(0);
  admitted.inc(30);
  completed.inc(1);
  hooks_.limits_[0].limit = 21;
  sample(1);
  admitted.inc(1);
  sample(4);  // a late timer: 1 over 3 s

  // Short numbers: three decimals at most, no float noise, no exponent.
  const std::string text = render_history_json(sampler_, std::nullopt);
  EXPECT_NE(text.find("\"gradient\":[0.1,0.1,0.1]"), std::string::npos) << text;
  EXPECT_NE(text.find("\"admitted_per_s\":[null,30,0.333]"), std::string::npos) << text;

  const auto h = render();
  EXPECT_EQ(h.at("interval_ms").as_int64(), 1000);
  EXPECT_EQ(h.at("capacity").as_int64(), 600);
  EXPECT_EQ(h.at("recent_intervals").as_int64(), 10);
  EXPECT_GT(h.at("memory_bytes").as_int64(), 0);
  EXPECT_EQ(as_text(h.at("t")),
            (std::vector<std::string>{std::to_string(kStartMs), std::to_string(kStartMs + 1000),
                                      std::to_string(kStartMs + 4000)}));
  const auto& filters = h.at("filters").as_array();
  ASSERT_EQ(filters.size(), 1u);
  const auto& f = filters[0].as_object();
  EXPECT_EQ(f.at("listener").as_string(), "ingress");
  EXPECT_EQ(f.at("filter").as_string(), "vegas");
  EXPECT_EQ(f.at("type").as_string(), "rtt_gradient");
  EXPECT_EQ(as_text(f.at("limit")), (std::vector<std::string>{"20", "21", "21"}));
  EXPECT_EQ(as_text(f.at("admitted_per_s")), (std::vector<std::string>{"null", "30", "0.333"}));
  EXPECT_EQ(as_text(f.at("gradient")), (std::vector<std::string>{"0.1", "0.1", "0.1"}));
  // Unknown throughout the range: left out (read as all null).
  EXPECT_FALSE(f.contains("rtt_noload_ms"));
  EXPECT_FALSE(f.contains("queue_wait_p99_ms"));
  for (const auto& s : kHistoryFilterSeries) {
    if (f.contains(s.name)) {
      EXPECT_EQ(f.at(s.name).as_array().size(), 3u) << s.name;
    }
  }
  const auto& classes = f.at("classes").as_object();
  ASSERT_EQ(classes.size(), kCriticalityCount);
  for (Criticality c : kCriticalities) {
    const auto& cls = classes.at(to_string(c)).as_object();
    // From the snapshot's zeros: known to be zero. No class histograms: no percentile series.
    EXPECT_EQ(as_text(cls.at("queued")), (std::vector<std::string>{"0", "0", "0"}));
    EXPECT_EQ(as_text(cls.at("admitted_per_s")), (std::vector<std::string>{"null", "0", "0"}));
    EXPECT_FALSE(cls.contains("queue_wait_p99_ms"));
  }

  const auto& listeners = h.at("listeners").as_array();
  ASSERT_EQ(listeners.size(), 1u);
  const auto& l = listeners[0].as_object();
  EXPECT_EQ(l.at("listener").as_string(), "ingress");
  const auto& reasons = l.at("rq_per_s").as_object();
  EXPECT_EQ(as_text(reasons.at("completed")), (std::vector<std::string>{"null", "1", "0"}));
  EXPECT_EQ(reasons.size(), 1u);  // the only end-reason counter registered
  EXPECT_FALSE(l.contains("queue_wait_p99_ms"));
}

TEST_F(HistoryRenderTest, SinceReturnsOnlyNewerSamples) {
  hooks_.limits_ = {limiter("vegas", "rtt_gradient", 20)};
  for (int k = 0; k < 5; ++k) sample(k);
  const auto newer = render(kStartMs + 2000);
  EXPECT_EQ(as_text(newer.at("t")), (std::vector<std::string>{std::to_string(kStartMs + 3000),
                                                              std::to_string(kStartMs + 4000)}));
  EXPECT_EQ(newer.at("filters").as_array()[0].at("limit").as_array().size(), 2u);
  const auto none = render(kStartMs + 4000);
  EXPECT_TRUE(none.at("t").as_array().empty());
  EXPECT_TRUE(none.at("filters").as_array().empty());
  EXPECT_EQ(render(0).at("t").as_array().size(), 5u);
}

TEST_F(HistoryRenderTest, AFilterMissingFromSomeSamplesHasNullsThereAndOneAbsentIsLeftOut) {
  hooks_.limits_ = {limiter("gone", "fixed_semaphore", 1)};
  sample(0);
  hooks_.limits_ = {limiter("fixed", "fixed_semaphore", 8)};
  sample(1);
  hooks_.limits_ = {limiter("fixed", "fixed_semaphore", 8), limiter("vegas", "rtt_gradient", 5)};
  sample(2);

  const auto all = render();
  const auto& filters = all.at("filters").as_array();
  ASSERT_EQ(filters.size(), 3u);
  EXPECT_EQ(filters[0].at("filter").as_string(), "gone");
  EXPECT_EQ(as_text(filters[0].at("limit")), (std::vector<std::string>{"1", "null", "null"}));
  EXPECT_EQ(as_text(filters[1].at("limit")), (std::vector<std::string>{"null", "8", "8"}));
  EXPECT_EQ(as_text(filters[2].at("limit")), (std::vector<std::string>{"null", "null", "5"}));

  const auto later = render(kStartMs);
  ASSERT_EQ(later.at("filters").as_array().size(), 2u);
  EXPECT_EQ(later.at("filters").as_array()[0].at("filter").as_string(), "fixed");
}

TEST_F(HistoryRenderTest, AFilterWithoutSnapshotOrClassStatsHasNoClasses) {
  hooks_.set_config(R"({"listeners": [{"name": "ingress", "filters": [
      {"name": "qwb", "type": "queue_wait_budget"}]}]})");
  registry_.gauge(StatName{"filter", {{"listener", "ingress"}, {"filter", "qwb"}}, "queued"}, "");
  sample(0);
  const auto h = render();
  const auto& f = h.at("filters").as_array().at(0).as_object();
  EXPECT_EQ(f.at("type").as_string(), "queue_wait_budget");
  EXPECT_EQ(as_text(f.at("queued")), (std::vector<std::string>{"0"}));
  EXPECT_FALSE(f.contains("limit"));
  EXPECT_TRUE(f.at("classes").as_object().empty());
}

TEST_F(HistoryRenderTest, NamesAreJsonEscaped) {
  LimiterSnapshot odd = limiter("a\"b\\c", "fixed_semaphore", 1);
  odd.listener = "in\ngress";
  hooks_.limits_ = {odd};
  sample(0);
  const auto h = render();
  EXPECT_EQ(h.at("filters").as_array()[0].at("filter").as_string(), "a\"b\\c");
  EXPECT_EQ(h.at("filters").as_array()[0].at("listener").as_string(), "in\ngress");
}

TEST_F(HistoryRenderTest, AnEmptyHistoryIsStillTheFullShape) {
  const auto h = render();
  EXPECT_TRUE(h.at("t").as_array().empty());
  EXPECT_TRUE(h.at("filters").as_array().empty());
  EXPECT_TRUE(h.at("listeners").as_array().empty());
  EXPECT_TRUE(h.at("queues").as_array().empty());
  EXPECT_TRUE(h.at("consumers").as_array().empty());
}

TEST_F(HistoryRenderTest, QueuesAndConsumersAreColumnsAlignedWithTheTimestamps) {
  hooks_.set_config(R"({"listeners": [], "queues": [{"name": "work"}],
                        "consumers": [{"name": "pull", "queue": "work", "filters": []}]})");
  queue::QueueStats work(registry_, "work");
  queue::ConsumerStats pull(registry_, "pull");
  work.backlog.set(7);
  sample(0);
  work.backlog.set(9);
  work.frontend_rq_ok_total.inc(4);
  work.frontend_rq_time_us.record(12'000);
  pull.consumer_rq_active.add(2);
  pull.count_completed(0);
  pull.count_completed(0);
  sample(1);
  const auto h = render();
  const auto& queues = h.at("queues").as_array();
  ASSERT_EQ(queues.size(), 1u);
  const auto& q = queues[0].as_object();
  EXPECT_EQ(q.at("queue").as_string(), "work");
  EXPECT_EQ(as_text(q.at("backlog")), (std::vector<std::string>{"7", "9"}));
  EXPECT_EQ(as_text(q.at("open")), (std::vector<std::string>{"0", "0"}));
  EXPECT_EQ(as_text(q.at("e2e_p99_ms")), (std::vector<std::string>{"null", "12"}));
  const auto& rq = q.at("rq_per_s").as_object();
  ASSERT_EQ(rq.size(), kQueueOutcomes.size());
  EXPECT_EQ(as_text(rq.at("ok")), (std::vector<std::string>{"null", "4"}));
  EXPECT_EQ(as_text(rq.at("too_large")), (std::vector<std::string>{"null", "0"}));
  EXPECT_FALSE(q.contains("redis_cpu_ratio"));  // unknown throughout: left out
  for (const auto& s : kHistoryQueueSeries) {
    if (q.contains(s.name)) {
      EXPECT_EQ(q.at(s.name).as_array().size(), 2u) << s.name;
    }
  }
  const auto& consumers = h.at("consumers").as_array();
  ASSERT_EQ(consumers.size(), 1u);
  const auto& c = consumers[0].as_object();
  EXPECT_EQ(c.at("consumer").as_string(), "pull");
  EXPECT_EQ(as_text(c.at("in_flight")), (std::vector<std::string>{"0", "2"}));
  EXPECT_EQ(as_text(c.at("completed_ok_per_s")), (std::vector<std::string>{"null", "2"}));
  EXPECT_FALSE(c.contains("limit"));  // no limiter

  const auto later = render(kStartMs);
  EXPECT_EQ(as_text(later.at("queues").as_array()[0].at("backlog")),
            (std::vector<std::string>{"9"}));
}

}  // namespace
}  // namespace sluice
