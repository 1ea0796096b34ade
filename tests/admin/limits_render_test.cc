#include "src/admin/limits_render.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

using namespace std::chrono_literals;

TEST(LimitsRenderTest, WritesEveryFieldAndNullForAbsentOptionals) {
  LimiterSnapshot fixed;
  fixed.listener = "ingress";
  fixed.filter = "fixed_semaphore";
  fixed.type = "fixed_semaphore";
  fixed.limit = 10;
  fixed.in_flight = 4;
  fixed.queued = 2;
  fixed.admitted = 1000;
  fixed.shed = 7;
  const auto out = render_limits_json({fixed}, TimePoint{}, {});
  const auto& o = out.as_array().at(0).as_object();
  EXPECT_EQ(o.at("listener").as_string(), "ingress");
  EXPECT_EQ(o.at("filter").as_string(), "fixed_semaphore");
  EXPECT_EQ(o.at("type").as_string(), "fixed_semaphore");
  EXPECT_EQ(o.at("limit").to_number<int>(), 10);
  EXPECT_EQ(o.at("in_flight").to_number<int>(), 4);
  EXPECT_EQ(o.at("queued").to_number<int>(), 2);
  EXPECT_EQ(o.at("admitted").to_number<int>(), 1000);
  EXPECT_EQ(o.at("shed").to_number<int>(), 7);
  for (const char* key :
       {"rtt_noload_ms", "rtt_smoothed_ms", "gradient", "p99_ms", "queueing", "tolerated_slowdown",
        "queue_wait_p99_ms_recent", "queue_calls", "service_calls", "queue_delay_ms"}) {
    ASSERT_TRUE(o.contains(key)) << key;
    EXPECT_TRUE(o.at(key).is_null()) << key;
  }
  EXPECT_TRUE(o.at("recent_decisions").as_array().empty());
  EXPECT_TRUE(o.at("baselines").as_array().empty());
  // Every class, zero until the filter counts per class.
  const auto& classes = o.at("classes").as_object();
  ASSERT_EQ(classes.size(), 4u);
  for (const char* name : {"sheddable", "sheddable_plus", "critical", "critical_plus"}) {
    const auto& c = classes.at(name).as_object();
    EXPECT_EQ(c.at("admitted").to_number<int>(), 0) << name;
    EXPECT_EQ(c.at("shed").to_number<int>(), 0) << name;
    EXPECT_EQ(c.at("queued").to_number<int>(), 0) << name;
  }
}

TEST(LimitsRenderTest, ClassesQueueingBaselinesAndRecentQueueWait) {
  LimiterSnapshot vegas;
  vegas.listener = "ingress";
  vegas.filter = "vegas";
  vegas.type = "rtt_gradient";
  vegas.queueing = 0.875;
  vegas.classes[index_of(Criticality::Sheddable)] = {10, 7, 3};
  vegas.classes[index_of(Criticality::CriticalPlus)] = {500, 0, 1};
  vegas.baselines.push_back({"/pkg.Svc/Get", 1.25, 40});
  vegas.baselines.push_back({"/pkg.Svc/Scan", 30.5, 6});
  LimiterSnapshot other = vegas;
  other.filter = "other";
  const RecentQueueWait recent = [](const LimiterSnapshot& l) -> std::optional<double> {
    if (l.listener == "ingress" && l.filter == "vegas") return 12.5;
    return std::nullopt;
  };

  const auto out = render_limits_json({vegas, other}, TimePoint{}, {}, recent);
  const auto& o = out.as_array().at(0).as_object();
  EXPECT_EQ(o.at("queueing").as_double(), 0.875);
  EXPECT_EQ(o.at("queue_wait_p99_ms_recent").as_double(), 12.5);
  EXPECT_TRUE(out.as_array().at(1).at("queue_wait_p99_ms_recent").is_null());
  const auto& classes = o.at("classes").as_object();
  // Least critical first, as the enum orders them.
  std::vector<std::string> names;
  for (const auto& kv : classes) names.emplace_back(kv.key());
  EXPECT_EQ(names,
            (std::vector<std::string>{"sheddable", "sheddable_plus", "critical", "critical_plus"}));
  EXPECT_EQ(classes.at("sheddable").at("admitted").to_number<int>(), 10);
  EXPECT_EQ(classes.at("sheddable").at("shed").to_number<int>(), 7);
  EXPECT_EQ(classes.at("sheddable").at("queued").to_number<int>(), 3);
  EXPECT_EQ(classes.at("critical_plus").at("admitted").to_number<int>(), 500);
  EXPECT_EQ(classes.at("critical").at("admitted").to_number<int>(), 0);
  const auto& baselines = o.at("baselines").as_array();
  ASSERT_EQ(baselines.size(), 2u);
  EXPECT_EQ(baselines[0].at("method").as_string(), "/pkg.Svc/Get");
  EXPECT_EQ(baselines[0].at("rtt_noload_ms").as_double(), 1.25);
  EXPECT_EQ(baselines[0].at("samples").to_number<int>(), 40);
  EXPECT_EQ(baselines[1].at("method").as_string(), "/pkg.Svc/Scan");
}

TEST(LimitsRenderTest, DecisionsCarryAgeAndWallClockTime) {
  LimiterSnapshot vegas;
  vegas.type = "rtt_gradient";
  vegas.rtt_noload_ms = 2.5;
  vegas.rtt_smoothed_ms = 4.0;
  vegas.gradient = 0.625;
  vegas.p99_ms = 9.0;
  vegas.tolerated_slowdown = 0.25;
  vegas.queue_calls = 3.0;
  vegas.service_calls = 1.0;
  vegas.queue_delay_ms = 30.0;
  const TimePoint now = TimePoint{} + 100s;
  vegas.recent_decisions.push_back({now - 2500ms, 20, 15, "gradient 0.62 < tolerance 0.85"});
  vegas.recent_decisions.push_back({now - 1ms, 15, 16, "increase"});
  const std::chrono::system_clock::time_point wall{std::chrono::milliseconds(1714566896789)};

  const auto out = render_limits_json({vegas}, now, wall);
  const auto& o = out.as_array().at(0).as_object();
  EXPECT_EQ(o.at("rtt_noload_ms").as_double(), 2.5);
  EXPECT_EQ(o.at("rtt_smoothed_ms").as_double(), 4.0);
  EXPECT_EQ(o.at("gradient").as_double(), 0.625);
  EXPECT_EQ(o.at("p99_ms").as_double(), 9.0);
  EXPECT_EQ(o.at("tolerated_slowdown").as_double(), 0.25);
  EXPECT_EQ(o.at("queue_calls").as_double(), 3.0);
  EXPECT_EQ(o.at("service_calls").as_double(), 1.0);
  EXPECT_EQ(o.at("queue_delay_ms").as_double(), 30.0);
  const auto& decisions = o.at("recent_decisions").as_array();
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_EQ(decisions[0].at("ms_ago").to_number<int64_t>(), 2500);
  EXPECT_EQ(decisions[0].at("at").as_string(), "2024-05-01T12:34:54.289Z");
  EXPECT_EQ(decisions[0].at("old_limit").to_number<int>(), 20);
  EXPECT_EQ(decisions[0].at("new_limit").to_number<int>(), 15);
  EXPECT_EQ(decisions[0].at("reason").as_string(), "gradient 0.62 < tolerance 0.85");
  EXPECT_EQ(decisions[1].at("ms_ago").to_number<int64_t>(), 1);
  EXPECT_EQ(decisions[1].at("at").as_string(), "2024-05-01T12:34:56.788Z");
}

}  // namespace
}  // namespace sluice
