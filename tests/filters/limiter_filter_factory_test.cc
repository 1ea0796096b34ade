#include "filters/limiter_filter_factory.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_filter_callbacks.h"
#include "tests/filters/build_limiter.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

TEST(LimiterFilterFactoryTest, FixedSemaphoreGateFollowsItsConfig) {
  FakeClock clock;
  StatsRegistry registry;
  FixedSemaphoreConfig c;
  c.max_concurrency = 7;
  c.max_queue = 3;
  c.queue_order = QueueOrder::Lifo;
  auto f = build_limiter("fixed_semaphore", "l", "fs", c, registry, clock);
  EXPECT_EQ(f->name(), "fs");
  EXPECT_EQ(f->type(), "fixed_semaphore");
  EXPECT_EQ(f->controller().gate().limit(), 7u);
  EXPECT_EQ(f->controller().gate().max_queue(), 3u);
  EXPECT_EQ(f->controller().gate().order(), PermitGate::Order::Lifo);
  EXPECT_EQ(f->snapshot()->type, "fixed_semaphore");
}

TEST(LimiterFilterFactoryTest, AdaptiveFiltersStartAtTheirInitialLimitClamped) {
  FakeClock clock;
  StatsRegistry registry;
  RttGradientConfig g;
  g.initial_limit = 50;
  g.max_limit = 30;
  auto rg = build_limiter("rtt_gradient", "l", "rg", g, registry, clock);
  EXPECT_EQ(rg->controller().gate().limit(), 30u);
  EXPECT_EQ(rg->type(), "rtt_gradient");
  AimdConfig a;
  a.latency_slo = 20ms;
  a.initial_limit = 4;
  auto ai = build_limiter("aimd", "l", "ai", a, registry, clock);
  EXPECT_EQ(ai->controller().gate().limit(), 4u);
  EXPECT_EQ(ai->type(), "aimd");
}

TEST(LimiterFilterFactoryTest, FiltersOfOneFactoryShareOneGate) {
  FakeClock clock;
  FakeDispatcher worker(clock);
  StatsRegistry registry;
  FixedSemaphoreConfig c;
  c.max_concurrency = 1;
  auto f = build_limiter("fixed_semaphore", "l", "fs", c, registry, clock);
  auto a = f->create();
  auto b = f->create();
  FakeFilterCallbacks cb_a(worker);
  FakeFilterCallbacks cb_b(worker);
  EXPECT_EQ(a->on_request(cb_a), FilterStatus::Continue);
  EXPECT_EQ(b->on_request(cb_b), FilterStatus::Stop);  // a holds the only permit
  EXPECT_EQ(f->controller().gate().in_flight(), 1u);
  EXPECT_EQ(f->controller().gate().queued(), 1u);
}

}  // namespace
}  // namespace sluice
