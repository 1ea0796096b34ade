#include "tools/loadgen/distribution.h"

#include <gtest/gtest.h>

namespace sluice::loadgen {
namespace {

TEST(DistributionTest, NearestRankPercentilesOfOneToHundred) {
  Distribution d;
  for (int i = 100; i >= 1; --i) d.add(i);  // unsorted on purpose
  EXPECT_EQ(d.count(), 100u);
  EXPECT_DOUBLE_EQ(d.percentile(0.50), 50);
  EXPECT_DOUBLE_EQ(d.percentile(0.95), 95);
  EXPECT_DOUBLE_EQ(d.percentile(0.99), 99);
  EXPECT_DOUBLE_EQ(d.max(), 100);
  EXPECT_DOUBLE_EQ(d.mean(), 50.5);
}

TEST(DistributionTest, SmallSamplesReportObservedValuesNotInterpolations) {
  Distribution d;
  for (double v : {10.0, 20.0, 30.0, 40.0}) d.add(v);
  EXPECT_DOUBLE_EQ(d.percentile(0.50), 20);  // rank ceil(2.0) = 2
  EXPECT_DOUBLE_EQ(d.percentile(0.95), 40);  // rank ceil(3.8) = 4
  EXPECT_DOUBLE_EQ(d.percentile(0.99), 40);
}

TEST(DistributionTest, RankIsNotPushedUpByBinaryFractions) {
  Distribution d;
  for (int i = 1; i <= 20; ++i) d.add(i);
  EXPECT_DOUBLE_EQ(d.percentile(0.95), 19);  // 0.95 * 20 is 19 exactly, not 19.000000001
}

TEST(DistributionTest, SingleSampleIsEveryPercentile) {
  Distribution d;
  d.add(7.5);
  EXPECT_DOUBLE_EQ(d.percentile(0.5), 7.5);
  EXPECT_DOUBLE_EQ(d.percentile(0.99), 7.5);
}

TEST(DistributionTest, EmptyDistributionSerialisesNullsWithAZeroCount) {
  Distribution d;
  boost::json::object o = d.to_json();
  EXPECT_EQ(o.at("n").to_number<uint64_t>(), 0u);
  EXPECT_TRUE(o.at("p99").is_null());
  EXPECT_TRUE(o.at("max").is_null());
}

TEST(DistributionTest, AddingAfterAQueryKeepsPercentilesRight) {
  Distribution d;
  d.add(5);
  d.add(1);
  EXPECT_DOUBLE_EQ(d.max(), 5);
  d.add(3);
  d.add(0.5);
  EXPECT_DOUBLE_EQ(d.percentile(0.5), 1);
  EXPECT_DOUBLE_EQ(d.max(), 5);
}

}  // namespace
}  // namespace sluice::loadgen
