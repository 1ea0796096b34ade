#include "filters/queue_wait_budget/queue_wait_budget_factory.h"

#include <gtest/gtest.h>

#include "filters/queue_wait_budget/queue_wait_budget.h"
#include "tests/fakes/fake_filter_callbacks.h"
#include "tests/filters/stat_reader.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

TEST(QueueWaitBudgetFactoryTest, HasNoLimitToReport) {
  FakeClock clock;
  StatsRegistry registry;
  QueueWaitBudgetConfig c;
  c.budget = 8ms;
  QueueWaitBudgetFactory f("l", "qwb", c, registry, clock);
  EXPECT_EQ(f.name(), "qwb");
  EXPECT_EQ(f.type(), "queue_wait_budget");
  EXPECT_EQ(f.snapshot(), nullptr);
}

TEST(QueueWaitBudgetFactoryTest, FiltersOfOneFactoryShareTheirStats) {
  FakeClock clock;
  FakeDispatcher worker(clock);
  StatsRegistry registry;
  QueueWaitBudgetConfig c;
  c.budget = 8ms;
  QueueWaitBudgetFactory f("l", "qwb", c, registry, clock);
  FakeFilterCallbacks cb1(worker);
  FakeFilterCallbacks cb2(worker);
  auto a = f.create();
  auto b = f.create();
  a->on_request(cb1);
  b->on_request(cb2);
  a->on_waiting();  // a later filter stopped each chain: they wait
  b->on_waiting();
  EXPECT_EQ(stat(registry, "filter.l.qwb.queued"), 2);
  clock.advance(8ms);
  EXPECT_EQ(stat(registry, "filter.l.qwb.shed_total"), 2);
}

}  // namespace
}  // namespace sluice
