#include "src/stats/gauge.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace sluice {
namespace {

TEST(GaugeTest, SetAddAndSubMoveTheValue) {
  Gauge g;
  g.set(10);
  g.add(5);
  g.sub(20);
  EXPECT_EQ(g.value(), -5);
}

TEST(GaugeTest, ConcurrentAddsAndSubsBalanceToZero) {
  Gauge g;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&g] {
      for (int n = 0; n < 50000; ++n) {
        g.add(1);
        g.sub(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(g.value(), 0);
}

TEST(FloatGaugeTest, HoldsTheLastValueSet) {
  FloatGauge g;
  EXPECT_EQ(g.value(), 0.0);
  g.set(0.85);
  EXPECT_DOUBLE_EQ(g.value(), 0.85);
}

}  // namespace
}  // namespace sluice
