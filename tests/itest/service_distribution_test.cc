#include "integration/upstream/service_distribution.h"

#include <gtest/gtest.h>

#include <cmath>

#include "integration/upstream/service_schedule.h"

namespace sluice::itest {
namespace {

using namespace std::chrono_literals;

ServiceDistribution make(std::string_view text) {
  auto d = ServiceDistribution::parse(text);
  EXPECT_TRUE(d.has_value()) << text;
  return d.value_or(*ServiceDistribution::parse("uniform:0:0"));
}

double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

TEST(ItestServiceDistributionTest, ParsesTheThreeKinds) {
  EXPECT_EQ(make("uniform:70ms:130ms").kind(), ServiceDistribution::Kind::kUniform);
  EXPECT_EQ(make("lognormal:95ms:0.5").kind(), ServiceDistribution::Kind::kLognormal);
  EXPECT_EQ(make("bimodal:5ms:100ms:0.1").kind(), ServiceDistribution::Kind::kBimodal);
  EXPECT_EQ(make("bimodal:5ms:100ms:0.1").text(), "bimodal:5ms:100ms:0.1");
}

TEST(ItestServiceDistributionTest, RejectsMalformedSpecs) {
  for (const char* bad :
       {"", "uniform", "uniform:70ms", "uniform:130ms:70ms", "uniform:70:130ms", "uniform:a:b",
        "uniform:70ms:130ms:1", "lognormal:95ms", "lognormal:0:0.5", "lognormal:95ms:-1",
        "lognormal:95ms:x", "lognormal:95ms:0.5x", "bimodal:5ms:100ms", "bimodal:5ms:100ms:1.5",
        "bimodal:5ms:100ms:-0.1", "normal:1ms:1ms", "uniform:-1ms:1ms"}) {
    EXPECT_EQ(ServiceDistribution::parse(bad), std::nullopt) << bad;
  }
}

TEST(ItestServiceDistributionTest, UniformQuantilesSpanMinToMax) {
  ServiceDistribution d = make("uniform:70ms:130ms");
  EXPECT_NEAR(ms(d.quantile(0.0)), 70, 1e-6);
  EXPECT_NEAR(ms(d.quantile(0.25)), 85, 1e-6);
  EXPECT_NEAR(ms(d.median()), 100, 1e-6);
  EXPECT_NEAR(ms(d.quantile(1.0)), 130, 1e-6);
}

TEST(ItestServiceDistributionTest, NormalQuantileMatchesKnownValues) {
  EXPECT_NEAR(normal_quantile(0.5), 0.0, 1e-9);
  EXPECT_NEAR(normal_quantile(0.975), 1.959964, 1e-6);
  EXPECT_NEAR(normal_quantile(0.01), -2.326348, 1e-6);
}

TEST(ItestServiceDistributionTest, LognormalHasTheGivenMedianAndSigma) {
  ServiceDistribution d = make("lognormal:95ms:0.5");
  EXPECT_NEAR(ms(d.median()), 95, 1e-3);
  // One sigma above the median in ln terms: Phi(1) = 0.841345.
  EXPECT_NEAR(ms(d.quantile(0.841345)), 95 * std::exp(0.5), 1e-2);
  EXPECT_NEAR(ms(d.quantile(0.99)), 95 * std::exp(0.5 * 2.326348), 1e-2);
  // Sigma 0 is a constant.
  EXPECT_NEAR(ms(make("lognormal:10ms:0").quantile(0.999)), 10, 1e-6);
}

TEST(ItestServiceDistributionTest, BimodalGivesTheSlowValueToTheTopShare) {
  ServiceDistribution d = make("bimodal:5ms:100ms:0.1");
  EXPECT_EQ(d.quantile(0.0), Duration(5ms));
  EXPECT_EQ(d.quantile(0.89), Duration(5ms));
  EXPECT_EQ(d.quantile(0.91), Duration(100ms));
  EXPECT_EQ(make("bimodal:5ms:100ms:0").quantile(0.999), Duration(5ms));
  EXPECT_EQ(make("bimodal:5ms:100ms:1").quantile(0.0), Duration(100ms));
}

TEST(ItestServiceDistributionTest, SamplerIsReproducibleAndFollowsTheShares) {
  ServiceTimeSampler a(make("bimodal:5ms:100ms:0.1"), 7);
  ServiceTimeSampler b(make("bimodal:5ms:100ms:0.1"), 7);
  int slow = 0;
  for (int i = 0; i < 10000; ++i) {
    Duration x = a.sample();
    EXPECT_EQ(x, b.sample());
    slow += x == Duration(100ms);
  }
  // Binomial(10000, 0.1): sd 30; the seed fixes the count, the bound only documents it.
  EXPECT_GT(slow, 850);
  EXPECT_LT(slow, 1150);
}

TEST(ItestServiceDistributionTest, ScheduleDrawsEveryJobFromItsDistribution) {
  ServiceSchedule s(7ms, {}, ScheduleStart::kFirstRequest, TimePoint{});
  s.set_distribution(make("uniform:20ms:30ms"), 1);
  EXPECT_EQ(s.peek(TimePoint{}), Duration(25ms));
  for (int i = 0; i < 100; ++i) {
    Duration x = s.service_time_at(TimePoint{} + std::chrono::seconds(i));
    EXPECT_GE(x, Duration(20ms));
    EXPECT_LE(x, Duration(30ms));
  }
}

}  // namespace
}  // namespace sluice::itest
