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
  for (const char* key : {"rtt_noload_ms", "rtt_smoothed_ms", "gradient", "p99_ms"}) {
    ASSERT_TRUE(o.contains(key)) << key;
    EXPECT_TRUE(o.at(key).is_null()) << key;
  }
  EXPECT_TRUE(o.at("recent_decisions").as_array().empty());
}

TEST(LimitsRenderTest, DecisionsCarryAgeAndWallClockTime) {
  LimiterSnapshot vegas;
  vegas.type = "rtt_gradient";
  vegas.rtt_noload_ms = 2.5;
  vegas.rtt_smoothed_ms = 4.0;
  vegas.gradient = 0.625;
  vegas.p99_ms = 9.0;
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
