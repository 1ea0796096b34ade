#include "src/admin/history_sampler.h"

#include <gtest/gtest.h>

#include <cmath>

#include "src/queue/queue_consumer.h"
#include "src/queue/queue_stats.h"
#include "tests/admin/fake_admin_hooks.h"
#include "tests/fakes/fake_clock.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

StatName filter_stat(const std::string& filter, const std::string& leaf) {
  return StatName{"filter", {{"listener", "ingress"}, {"filter", filter}}, leaf};
}

StatName class_stat(const std::string& filter, const std::string& criticality,
                    const std::string& leaf) {
  return StatName{
      "filter", {{"listener", "ingress"}, {"filter", filter}, {"criticality", criticality}}, leaf};
}

StatName listener_stat(const std::string& leaf) {
  return StatName{"listener", {{"listener", "ingress"}}, leaf};
}

// A queue wait as percentiles report it: the upper bound of its bucket, in ms.
double bucket_ms(uint64_t us) {
  return static_cast<double>(Histogram::bucket_upper_bound(Histogram::bucket_index(us))) / 1000.0;
}
float bucket_ms_f(uint64_t us) { return static_cast<float>(bucket_ms(us)); }

LimiterSnapshot limiter(const std::string& filter, const std::string& type) {
  LimiterSnapshot s;
  s.listener = "ingress";
  s.filter = filter;
  s.type = type;
  return s;
}

constexpr const char* kConfig = R"({"listeners": [{"name": "ingress", "filters": [
    {"name": "queue_wait_budget", "type": "queue_wait_budget", "budget": "20ms"},
    {"name": "vegas", "type": "rtt_gradient"}]}]})";

class HistorySamplerTest : public ::testing::Test {
 protected:
  explicit HistorySamplerTest(HistoryOptions options = {}) : sampler_(registry_, hooks_, options) {}

  // One interval later (1 s unless told), then a sample. The wall clock runs with the fake one.
  void tick(Duration d = 1s) {
    clock_.advance(d);
    sample();
  }
  void sample() {
    sampler_.sample(clock_.now(),
                    std::chrono::system_clock::time_point(
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            clock_.now().time_since_epoch())));
  }
  const HistorySample& last() const { return sampler_.samples().back(); }
  const HistoryFilterPoint& point(const std::string& filter) const {
    for (const HistoryFilterPoint& p : last().filters) {
      if (p.key->filter == filter) return p;
    }
    throw std::logic_error("no point for " + filter);
  }

  FakeClock clock_;
  StatsRegistry registry_;
  FakeAdminHooks hooks_;
  HistorySampler sampler_;
};

TEST_F(HistorySamplerTest, FirstSampleHasTheLiveValuesButNoRatesOrPercentiles) {
  LimiterSnapshot vegas = limiter("vegas", "rtt_gradient");
  vegas.limit = 20;
  vegas.in_flight = 3;
  vegas.queued = 2;
  vegas.admitted = 500;
  vegas.rtt_noload_ms = 1.5;
  vegas.rtt_smoothed_ms = 2.25;
  vegas.gradient = 0.75;
  vegas.queueing = 0.5;
  hooks_.limits_ = {vegas};
  registry_.histogram(filter_stat("vegas", "queue_wait_us"), "", "us").record(4000);
  sample();
  ASSERT_EQ(sampler_.samples().size(), 1u);
  const HistoryFilterPoint& p = point("vegas");
  EXPECT_EQ(p.key->listener, "ingress");
  EXPECT_EQ(p.key->type, "rtt_gradient");
  EXPECT_EQ(p.limit, 20.0f);
  EXPECT_EQ(p.in_flight, 3.0f);
  EXPECT_EQ(p.queued, 2.0f);
  EXPECT_EQ(p.rtt_noload_ms, 1.5f);
  EXPECT_EQ(p.rtt_smoothed_ms, 2.25f);
  EXPECT_EQ(p.gradient, 0.75f);
  EXPECT_EQ(p.queueing, 0.5f);
  EXPECT_TRUE(std::isnan(p.p99_ms));
  EXPECT_TRUE(std::isnan(p.admitted_per_s));
  EXPECT_TRUE(std::isnan(p.queue_wait_p99_ms));
  EXPECT_FALSE(sampler_.recent_queue_wait_p99_ms("ingress", "vegas"));
}

TEST_F(HistorySamplerTest, RatesAreCounterDeltasOverTheMeasuredInterval) {
  Counter& admitted = registry_.counter(filter_stat("vegas", "admitted_total"), "");
  Counter& shed = registry_.counter(filter_stat("vegas", "shed_total"), "");
  Counter& completed = registry_.counter(listener_stat("downstream_rq_completed_total"), "");
  Counter& reset = registry_.counter(listener_stat("downstream_rq_client_reset_total"), "");
  LimiterSnapshot vegas = limiter("vegas", "rtt_gradient");
  vegas.admitted = 999;  // the counters win over /limits' totals
  hooks_.limits_ = {vegas};
  admitted.inc(100);
  sample();
  admitted.inc(60);
  shed.inc(8);
  completed.inc(50);
  reset.inc(1);
  tick(2s);  // the timer can fire late: rates are per second of the real interval
  const HistoryFilterPoint& p = point("vegas");
  EXPECT_EQ(p.admitted_per_s, 30.0f);
  EXPECT_EQ(p.shed_per_s, 4.0f);
  const HistoryListenerPoint& l = last().listeners.at(0);
  EXPECT_EQ(*l.listener, "ingress");
  EXPECT_EQ(l.rq_per_s[static_cast<std::size_t>(EndReason::Completed)], 25.0f);
  EXPECT_EQ(l.rq_per_s[static_cast<std::size_t>(EndReason::ClientReset)], 0.5f);
  // Reasons without a counter are unknown, not zero.
  EXPECT_TRUE(std::isnan(l.rq_per_s[static_cast<std::size_t>(EndReason::Drained)]));
  tick();
  EXPECT_EQ(point("vegas").admitted_per_s, 0.0f);
}

TEST_F(HistorySamplerTest, LimitsTotalsGiveRatesWhenAFilterHasNoCounters) {
  LimiterSnapshot fixed = limiter("fixed", "fixed_semaphore");
  fixed.admitted = 10;
  hooks_.limits_ = {fixed};
  sample();
  hooks_.limits_[0].admitted = 25;
  hooks_.limits_[0].shed = 5;
  tick();
  EXPECT_EQ(point("fixed").admitted_per_s, 15.0f);
  EXPECT_EQ(point("fixed").shed_per_s, 5.0f);
}

TEST_F(HistorySamplerTest, QueueWaitPercentilesCoverTheLastIntervalOnly) {
  Histogram& qw = registry_.histogram(filter_stat("vegas", "queue_wait_us"), "", "us");
  Histogram& lqw = registry_.histogram(listener_stat("downstream_rq_queue_wait_us"), "", "us");
  hooks_.limits_ = {limiter("vegas", "rtt_gradient")};
  for (int i = 0; i < 1000; ++i) qw.record(100'000);  // a bad minute ...
  sample();
  for (int i = 0; i < 100; ++i) {  // ... then a calm second
    qw.record(1000);
    lqw.record(i < 50 ? 200 : 3000);
  }
  tick();
  // Since start the p99 is still 100 ms; over the last second it is 1 ms (its bucket's bound).
  EXPECT_EQ(registry_.snapshot()[0].histogram.quantile(0.99), 100'000u);
  EXPECT_EQ(point("vegas").queue_wait_p99_ms, bucket_ms_f(1000));
  const HistoryListenerPoint& l = last().listeners.at(0);
  EXPECT_EQ(l.queue_wait_p50_ms, bucket_ms_f(200));
  EXPECT_EQ(l.queue_wait_p99_ms, 3.0f);  // the largest value ever: exact
  // A second in which nothing waited has no percentile (a gap), not a zero.
  tick();
  EXPECT_TRUE(std::isnan(point("vegas").queue_wait_p99_ms));
  EXPECT_TRUE(std::isnan(last().listeners.at(0).queue_wait_p99_ms));
}

TEST_F(HistorySamplerTest, RecentQueueWaitP99SpansTheLastTenIntervals) {
  Histogram& qw = registry_.histogram(filter_stat("vegas", "queue_wait_us"), "", "us");
  hooks_.limits_ = {limiter("vegas", "rtt_gradient")};
  for (int i = 0; i < 1000; ++i) qw.record(500'000);  // before the first sample: never "recent"
  sample();                                           // sample 0
  for (int i = 0; i < 10; ++i) qw.record(40'000);     // in interval 1
  tick();                                             // sample 1
  EXPECT_EQ(sampler_.recent_queue_wait_p99_ms("ingress", "vegas"), bucket_ms(40'000));
  for (int s = 2; s <= 10; ++s) {
    qw.record(2000);
    tick();  // samples 2..10: interval 1 is still within the last ten
    EXPECT_EQ(sampler_.recent_queue_wait_p99_ms("ingress", "vegas"), bucket_ms(40'000)) << s;
  }
  qw.record(2000);
  tick();  // sample 11: the window is intervals 2..11
  EXPECT_EQ(sampler_.recent_queue_wait_p99_ms("ingress", "vegas"), bucket_ms(2000));
  for (int s = 12; s <= 21; ++s) tick();  // ten quiet intervals
  EXPECT_FALSE(sampler_.recent_queue_wait_p99_ms("ingress", "vegas"));
  EXPECT_FALSE(sampler_.recent_queue_wait_p99_ms("ingress", "nope"));
}

TEST_F(HistorySamplerTest, FiltersFollowTheConfigOrderWithTypesFromLimitsOrConfig) {
  hooks_.set_config(kConfig);
  hooks_.limits_ = {limiter("vegas", "rtt_gradient")};
  registry_.gauge(filter_stat("queue_wait_budget", "queued"), "").set(4);
  registry_.gauge(filter_stat("queue_wait_budget", "in_flight"), "").set(2);
  // Stats of a filter a reload removed stay in the registry; the config says it is gone.
  registry_.counter(filter_stat("removed", "admitted_total"), "").inc();
  sample();
  ASSERT_EQ(last().filters.size(), 2u);
  EXPECT_EQ(last().filters[0].key->filter, "queue_wait_budget");
  EXPECT_EQ(last().filters[0].key->type, "queue_wait_budget");
  EXPECT_EQ(last().filters[0].queued, 4.0f);
  EXPECT_EQ(last().filters[0].in_flight, 2.0f);
  EXPECT_TRUE(std::isnan(last().filters[0].limit));
  EXPECT_EQ(last().filters[1].key->filter, "vegas");
  EXPECT_EQ(last().filters[1].key->type, "rtt_gradient");
}

TEST_F(HistorySamplerTest, WithoutAConfigTheStatsNameTheFilters) {
  registry_.counter(filter_stat("a", "admitted_total"), "");
  hooks_.limits_ = {limiter("b", "aimd")};
  sample();
  ASSERT_EQ(last().filters.size(), 2u);
  EXPECT_EQ(last().filters[0].key->filter, "b");
  EXPECT_EQ(last().filters[1].key->filter, "a");
  EXPECT_EQ(last().filters[1].key->type, "");
}

TEST_F(HistorySamplerTest, AThrowingConfigDumpDoesNotStopTheHistory) {
  hooks_.throw_on_config_dump = true;
  hooks_.limits_ = {limiter("vegas", "rtt_gradient")};
  sample();
  ASSERT_EQ(last().filters.size(), 1u);
}

TEST_F(HistorySamplerTest, ClassesComeFromClassStatsOrElseFromTheSnapshot) {
  Counter& critical_admitted =
      registry_.counter(class_stat("vegas", "critical", "class_admitted_total"), "");
  Counter& critical_shed =
      registry_.counter(class_stat("vegas", "critical", "class_shed_total"), "");
  Histogram& critical_wait =
      registry_.histogram(class_stat("vegas", "critical", "class_queue_wait_us"), "", "us");
  LimiterSnapshot vegas = limiter("vegas", "rtt_gradient");
  vegas.classes[index_of(Criticality::Sheddable)] = {100, 10, 7};
  vegas.classes[index_of(Criticality::Critical)] = {999, 999, 3};  // stats win for rates
  hooks_.limits_ = {vegas};
  sample();
  critical_admitted.inc(40);
  critical_shed.inc(2);
  for (int i = 0; i < 10; ++i) critical_wait.record(12'000);
  hooks_.limits_[0].classes[index_of(Criticality::Sheddable)] = {130, 30, 9};
  tick();
  const auto& classes = point("vegas").classes;
  const HistoryClassPoint& critical = classes[index_of(Criticality::Critical)];
  EXPECT_EQ(critical.admitted_per_s, 40.0f);
  EXPECT_EQ(critical.shed_per_s, 2.0f);
  EXPECT_EQ(critical.queued, 3.0f);
  EXPECT_EQ(critical.queue_wait_p99_ms, 12.0f);  // the only value recorded: exact
  const HistoryClassPoint& sheddable = classes[index_of(Criticality::Sheddable)];
  EXPECT_EQ(sheddable.admitted_per_s, 30.0f);
  EXPECT_EQ(sheddable.shed_per_s, 20.0f);
  EXPECT_EQ(sheddable.queued, 9.0f);
  EXPECT_TRUE(std::isnan(sheddable.queue_wait_p99_ms));  // no class histogram
  const HistoryClassPoint& plus = classes[index_of(Criticality::CriticalPlus)];
  EXPECT_EQ(plus.admitted_per_s, 0.0f);
  EXPECT_EQ(plus.queued, 0.0f);
}

TEST_F(HistorySamplerTest, ClassesOfAFilterWithoutSnapshotComeFromItsStats) {
  hooks_.set_config(kConfig);
  Counter& shed =
      registry_.counter(class_stat("queue_wait_budget", "sheddable", "class_shed_total"), "");
  sample();
  shed.inc(3);
  tick();
  const HistoryFilterPoint& p = point("queue_wait_budget");
  EXPECT_EQ(p.classes[index_of(Criticality::Sheddable)].shed_per_s, 3.0f);
  EXPECT_TRUE(std::isnan(p.classes[index_of(Criticality::Sheddable)].queued));
  EXPECT_TRUE(std::isnan(p.classes[index_of(Criticality::Critical)].shed_per_s));
}

TEST_F(HistorySamplerTest, TimestampsStrictlyIncreaseEvenWhenTheWallClockStepsBack) {
  const auto wall = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'000'000));
  sampler_.sample(clock_.now(), wall);
  clock_.advance(1s);
  sampler_.sample(clock_.now(), wall - 5s);
  clock_.advance(1s);
  sampler_.sample(clock_.now(), wall + 3s);
  ASSERT_EQ(sampler_.samples().size(), 3u);
  EXPECT_EQ(sampler_.samples()[0].t_ms, 1'000'000);
  EXPECT_EQ(sampler_.samples()[1].t_ms, 1'000'001);
  EXPECT_EQ(sampler_.samples()[2].t_ms, 1'003'000);
}

// Queue mode: the stats are queue mode's own (queue::QueueStats, queue::ConsumerStats).
constexpr const char* kQueueConfig = R"({"listeners": [],
    "queues": [{"name": "work", "stream": "sluice:work"}],
    "consumers": [{"name": "pull", "queue": "work", "cluster": "app",
                   "filters": [{"name": "budget", "type": "queue_wait_budget"},
                               {"name": "aimd", "type": "aimd"}]}]})";

class HistoryQueueModeTest : public HistorySamplerTest {
 protected:
  HistoryQueueModeTest() { hooks_.set_config(kQueueConfig); }
  const HistoryQueuePoint& queue() const { return last().queues.at(0); }
  const HistoryConsumerPoint& consumer() const { return last().consumers.at(0); }
  static std::size_t outcome(std::string_view name) {
    for (std::size_t i = 0; i < kQueueOutcomes.size(); ++i) {
      if (kQueueOutcomes[i] == name) return i;
    }
    throw std::logic_error("no outcome " + std::string(name));
  }

  queue::QueueStats work_{registry_, "work"};
  queue::ConsumerStats pull_{registry_, "pull"};
};

TEST_F(HistoryQueueModeTest, NoQueueModeNoQueuePoints) {
  // The configuration is the authority: stats alone (the fixture registered some) do not make
  // a queue.
  hooks_.set_config(R"({"listeners": [], "queues": [], "consumers": []})");
  HistorySamplerTest::sample();
  EXPECT_TRUE(last().queues.empty());
  EXPECT_TRUE(last().consumers.empty());
}

TEST_F(HistoryQueueModeTest, AQueuePointHasOutcomeRatesTheGroupAndTheIntervalsEndToEnd) {
  for (int i = 0; i < 100; ++i) work_.frontend_rq_time_us.record(800'000);  // before: not shown
  work_.frontend_rq_ok_total.inc(50);
  HistorySamplerTest::sample();
  ASSERT_EQ(last().queues.size(), 1u);
  EXPECT_EQ(*queue().queue, "work");
  EXPECT_TRUE(std::isnan(queue().rq_per_s[outcome("ok")]));  // no interval yet
  EXPECT_TRUE(std::isnan(queue().e2e_p99_ms));
  work_.frontend_rq_ok_total.inc(40);
  work_.frontend_rq_backpressure_total.inc(6);
  work_.frontend_rq_backpressure_wait_total.inc(6);  // a part of backpressure: not an outcome
  work_.backlog.set(120);
  work_.pending.set(4);
  work_.stream_length.set(124);
  work_.consumers.set(2);
  work_.frontend_rq_open.add(9);
  work_.drain_rate.set(30.5);
  work_.estimated_wait_ms.set(3934);
  for (int i = 0; i < 100; ++i) work_.frontend_rq_time_us.record(i < 50 ? 2000 : 9000);
  tick(2s);
  const HistoryQueuePoint& q = queue();
  EXPECT_EQ(q.rq_per_s[outcome("ok")], 20.0f);
  EXPECT_EQ(q.rq_per_s[outcome("backpressure")], 3.0f);
  EXPECT_EQ(q.rq_per_s[outcome("timeout")], 0.0f);
  EXPECT_EQ(q.backlog, 120.0f);
  EXPECT_EQ(q.pending, 4.0f);
  EXPECT_EQ(q.stream_length, 124.0f);
  EXPECT_EQ(q.consumers, 2.0f);
  EXPECT_EQ(q.open, 9.0f);
  EXPECT_EQ(q.drain_rate, 30.5f);
  EXPECT_EQ(q.estimated_wait_ms, 3934.0f);
  EXPECT_EQ(q.e2e_p50_ms, bucket_ms_f(2000));
  EXPECT_EQ(q.e2e_p99_ms, bucket_ms_f(9000));
  // Redis has not answered INFO yet (the gauges read 0): unknown, not 0.
  EXPECT_TRUE(std::isnan(q.redis_used_memory_bytes));
  EXPECT_TRUE(std::isnan(q.redis_cpu_ratio));
}

TEST_F(HistoryQueueModeTest, TheRecentEndToEndWindowSpansTheLastTenIntervals) {
  const std::string name = "queue.work.frontend_rq_time_us";
  HistorySamplerTest::sample();  // sample 0
  EXPECT_EQ(sampler_.recent_histogram(name), nullptr);
  work_.frontend_rq_time_us.record(70'000);  // in interval 1
  tick();
  ASSERT_NE(sampler_.recent_histogram(name), nullptr);
  EXPECT_EQ(sampler_.recent_histogram(name)->count, 1u);
  for (int s = 2; s <= 10; ++s) {
    work_.frontend_rq_time_us.record(1000);
    tick();
  }
  ASSERT_NE(sampler_.recent_histogram(name), nullptr);
  EXPECT_EQ(sampler_.recent_histogram(name)->count, 10u);
  EXPECT_EQ(sampler_.recent_histogram(name)->quantile(1.0), 70'000u);
  tick();  // sample 11: interval 1 has left the window
  EXPECT_EQ(sampler_.recent_histogram(name)->count, 9u);
  EXPECT_EQ(sampler_.recent_histogram(name)->quantile(1.0),
            Histogram::bucket_upper_bound(Histogram::bucket_index(1000)));
  for (int s = 12; s <= 21; ++s) tick();
  EXPECT_EQ(sampler_.recent_histogram(name), nullptr);
}

TEST_F(HistoryQueueModeTest, RedisCpuIsSecondsPerSecondOverTheRecentWindow) {
  work_.redis_used_memory_bytes.set(2'000'000);
  work_.redis_cpu_seconds.set(100.0);
  HistorySamplerTest::sample();
  EXPECT_EQ(queue().redis_used_memory_bytes, 2'000'000.0f);
  EXPECT_TRUE(std::isnan(queue().redis_cpu_ratio));
  EXPECT_FALSE(sampler_.recent_redis_cpu_ratio("work"));
  // Polled every second like the sampler, so one interval sees 0 or 2 polls; the window evens
  // that out: 0.25 s of CPU per second.
  const double polls[] = {100.0, 100.5, 100.5, 101.0, 101.0, 101.0, 101.75, 102.0};
  for (double cpu : polls) {
    work_.redis_cpu_seconds.set(cpu);
    tick();
  }
  EXPECT_FLOAT_EQ(queue().redis_cpu_ratio, 0.25f);
  EXPECT_DOUBLE_EQ(sampler_.recent_redis_cpu_ratio("work").value_or(0), 0.25);
  // Redis restarted: its CPU counter starts again, and so does the window.
  work_.redis_cpu_seconds.set(0.5);
  tick();
  EXPECT_TRUE(std::isnan(queue().redis_cpu_ratio));
  work_.redis_cpu_seconds.set(1.0);
  tick();
  EXPECT_FLOAT_EQ(queue().redis_cpu_ratio, 0.5f);
}

TEST_F(HistoryQueueModeTest, AConsumerPointHasItsWindowInFlightAndCompletionsByStatus) {
  LimiterSnapshot aimd;
  aimd.listener = "consumer:pull";
  aimd.filter = "aimd";
  aimd.type = "aimd";
  aimd.limit = 6;
  aimd.p99_ms = 41.5;
  hooks_.limits_ = {aimd};
  HistorySamplerTest::sample();
  pull_.consumer_rq_active.add(5);
  pull_.consumer_window.set(1);
  pull_.consumer_rq_total.inc(30);
  for (int i = 0; i < 24; ++i) pull_.count_completed(0);
  for (int i = 0; i < 4; ++i) pull_.count_completed(14);
  pull_.count_completed(99);  // not a status: counted as invalid, an error
  pull_.consumer_rq_expired_total.inc(2);
  for (int i = 0; i < 10; ++i) pull_.consumer_rq_time_us.record(i < 9 ? 5000 : 60'000);
  tick(2s);
  const HistoryConsumerPoint& c = consumer();
  EXPECT_EQ(*c.consumer, "pull");
  EXPECT_EQ(c.limit, 6.0f);
  EXPECT_EQ(c.in_flight, 5.0f);
  EXPECT_EQ(c.window, 1.0f);
  EXPECT_EQ(c.read_per_s, 15.0f);
  EXPECT_EQ(c.completed_ok_per_s, 12.0f);
  EXPECT_EQ(c.completed_error_per_s, 2.5f);
  EXPECT_EQ(c.expired_per_s, 1.0f);
  EXPECT_EQ(c.dead_lettered_per_s, 0.0f);
  EXPECT_EQ(c.p99_ms, 41.5f);
  EXPECT_EQ(c.rq_time_p99_ms, 60.0f);  // the largest value ever: exact
  EXPECT_NE(sampler_.recent_histogram("consumer.pull.consumer_rq_time_us"), nullptr);
  // The consumer's filters are in the history under listener "consumer:pull", in its chain
  // order, also the one /limits does not show (queue_wait_budget).
  ASSERT_EQ(last().filters.size(), 2u);
  EXPECT_EQ(last().filters[0].key->listener, "consumer:pull");
  EXPECT_EQ(last().filters[0].key->filter, "budget");
  EXPECT_EQ(last().filters[0].key->type, "queue_wait_budget");
  EXPECT_EQ(last().filters[1].key->filter, "aimd");
  EXPECT_EQ(last().filters[1].limit, 6.0f);
}

TEST_F(HistoryQueueModeTest, WithoutALimiterAConsumerHasNoWindowLimit) {
  HistorySamplerTest::sample();
  EXPECT_TRUE(std::isnan(consumer().limit));
  EXPECT_TRUE(std::isnan(consumer().p99_ms));
  EXPECT_EQ(consumer().in_flight, 0.0f);
}

// Ten minutes of one queue and one consumer, with their two duration histograms' windows
// (values spread over every bucket), stay under a quarter of a megabyte.
TEST_F(HistoryQueueModeTest, TenMinutesOfAQueueAndAConsumerStaySmall) {
  static_assert(sizeof(HistoryQueuePoint) <= 96);
  static_assert(sizeof(HistoryConsumerPoint) <= 64);
  hooks_.set_config(R"({"listeners": [], "queues": [{"name": "work"}],
                        "consumers": [{"name": "pull", "queue": "work", "filters": []}]})");
  uint64_t v = 1;
  for (int i = 0; i < 600; ++i) {
    for (int k = 0; k < 50; ++k) {
      work_.frontend_rq_time_us.record(v = v * 6364136223846793005u % 1'000'000'007u);
      pull_.consumer_rq_time_us.record(v % 10'000'000);
    }
    work_.redis_cpu_seconds.set(1.0 + i);
    tick();
  }
  const std::size_t full = sampler_.memory_bytes();
  EXPECT_LT(full, 256u * 1024) << full;  // 0.24 MB measured
  for (int i = 0; i < 100; ++i) tick();
  EXPECT_LE(sampler_.memory_bytes(), full + 4096);
}

class SmallHistorySamplerTest : public HistorySamplerTest {
 protected:
  SmallHistorySamplerTest() : HistorySamplerTest(HistoryOptions{1s, 5, 2}) {}
};

TEST_F(SmallHistorySamplerTest, KeepsOnlyTheLastSamplesAndForgetsRemovedFilters) {
  hooks_.limits_ = {limiter("old", "fixed_semaphore")};
  sample();
  hooks_.limits_ = {limiter("new", "fixed_semaphore")};
  for (int i = 0; i < 7; ++i) tick();
  ASSERT_EQ(sampler_.samples().size(), 5u);
  for (const HistorySample& s : sampler_.samples()) {
    ASSERT_EQ(s.filters.size(), 1u);
    EXPECT_EQ(s.filters[0].key->filter, "new");
  }
  EXPECT_EQ(sampler_.samples().back().t_ms - sampler_.samples().front().t_ms, 4000);
}

// What the README promises: ten minutes of one listener with three filters, histogram windows
// included, stay around half a megabyte, and stop growing once the ring is full.
TEST_F(HistorySamplerTest, TenMinutesOfThreeFiltersStayAroundHalfAMegabyte) {
  static_assert(sizeof(HistoryFilterPoint) <= 128);
  static_assert(sizeof(HistoryListenerPoint) <= 64);
  hooks_.set_config(R"({"listeners": [{"name": "ingress", "filters": [
      {"name": "a", "type": "queue_wait_budget"}, {"name": "b", "type": "rtt_gradient"},
      {"name": "c", "type": "fixed_semaphore"}]}]})");
  std::vector<Histogram*> histograms;
  for (const char* f : {"a", "b", "c"}) {
    registry_.counter(filter_stat(f, "admitted_total"), "");
    histograms.push_back(&registry_.histogram(filter_stat(f, "queue_wait_us"), "", "us"));
  }
  histograms.push_back(
      &registry_.histogram(listener_stat("downstream_rq_queue_wait_us"), "", "us"));
  registry_.counter(listener_stat("downstream_rq_completed_total"), "");
  uint64_t v = 1;
  for (int i = 0; i < 600; ++i) {
    for (Histogram* h : histograms) {
      for (int k = 0; k < 50; ++k) h->record(v = v * 6364136223846793005u % 1'000'000'007u);
    }
    tick();
  }
  const std::size_t full = sampler_.memory_bytes();
  EXPECT_LT(full, 600u * 1024) << full;
  EXPECT_GT(full, 600u * 3 * sizeof(HistoryFilterPoint));
  for (int i = 0; i < 100; ++i) tick();
  EXPECT_LE(sampler_.memory_bytes(), full + 4096);
  EXPECT_EQ(sampler_.samples().size(), 600u);
}

}  // namespace
}  // namespace sluice
