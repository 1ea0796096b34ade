#include "filters/chain_rebuild.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "filters/fixed_semaphore/fixed_semaphore.h"
#include "filters/limiter_filter_factory.h"
#include "filters/queue_wait_budget/queue_wait_budget.h"
#include "filters/rtt_gradient/rtt_gradient.h"
#include "tests/fakes/fake_filter_callbacks.h"
#include "tests/filters/stat_reader.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

FilterConfig semaphore(uint32_t n, uint32_t max_queue = 100, std::string name = "fs") {
  FixedSemaphoreConfig c;
  c.max_concurrency = n;
  c.max_queue = max_queue;
  return FilterConfig{std::move(name), "fixed_semaphore", c};
}

FilterConfig budget(Duration d) {
  QueueWaitBudgetConfig c;
  c.budget = d;
  return FilterConfig{"qwb", "queue_wait_budget", c};
}

FilterConfig gradient(uint32_t initial, uint32_t min, uint32_t max, std::string name = "rg") {
  RttGradientConfig c;
  c.initial_limit = initial;
  c.min_limit = min;
  c.max_limit = max;
  c.update_interval = 10ms;
  c.min_samples = 5;
  return FilterConfig{std::move(name), "rtt_gradient", c};
}

class ChainRebuildTest : public ::testing::Test {
 protected:
  void start(std::vector<FilterConfig> configs) {
    configs_ = configs;
    chain_ = make_filter_chain(configs, "l", registry_, clock_);
  }
  // Rebuilds the running chain with `configs` and makes the result the running chain.
  std::shared_ptr<const FilterChain> reload(std::vector<FilterConfig> configs) {
    ChainRebuild rebuild(chain_, configs_, configs, "l", registry_, clock_);
    configs_ = configs;
    std::shared_ptr<const FilterChain> old = chain_;
    chain_ = rebuild.commit();
    return old;
  }
  AdmissionController& controller(size_t i) {
    return dynamic_cast<LimiterFilterFactory&>(chain_->factory(i)).controller();
  }
  // A request through filter `i` alone.
  std::unique_ptr<StreamFilter> enter(size_t i, FakeFilterCallbacks& cb, FilterStatus expect) {
    auto f = chain_->factory(i).create();
    EXPECT_EQ(f->on_request(cb), expect);
    return f;
  }

  FakeClock clock_;
  FakeDispatcher worker_{clock_};
  StatsRegistry registry_;
  std::vector<FilterConfig> configs_;
  std::shared_ptr<const FilterChain> chain_;
};

TEST_F(ChainRebuildTest, AnUnchangedFilterKeepsItsVeryFactory) {
  start({budget(5ms), semaphore(2)});
  const FilterFactory* before = &chain_->factory(1);
  reload({budget(5ms), semaphore(2)});
  EXPECT_EQ(&chain_->factory(1), before);
}

TEST_F(ChainRebuildTest, AKeptSemaphoreTakesTheNewLimitAndWaitersStayQueuedInOrder) {
  start({semaphore(1)});
  AdmissionController* kept = &controller(0);
  FakeFilterCallbacks a(worker_), b(worker_), c(worker_);
  auto fa = enter(0, a, FilterStatus::Continue);
  auto fb = enter(0, b, FilterStatus::Stop);
  auto fc = enter(0, c, FilterStatus::Stop);

  reload({semaphore(2)});
  EXPECT_EQ(&controller(0), kept) << "same name and type: the same state";
  EXPECT_EQ(kept->gate().limit(), 2u);
  worker_.run_pending();
  EXPECT_EQ(b.resumes, 1) << "the oldest waiter gets the new permit";
  EXPECT_EQ(c.resumes, 0) << "the next one still waits, in its place";
  EXPECT_EQ(kept->gate().queued(), 1u);

  reload({semaphore(1)});
  EXPECT_EQ(kept->gate().limit(), 1u);
  EXPECT_EQ(kept->gate().in_flight(), 2u) << "lowering revokes nothing";
  fa->on_complete(RequestOutcome{});
  worker_.run_pending();
  EXPECT_EQ(c.resumes, 0) << "one permit is still held: over the new limit";
  fb->on_complete(RequestOutcome{});
  worker_.run_pending();
  EXPECT_EQ(c.resumes, 1);
  EXPECT_EQ(stat(registry_, "filter.l.fs.admitted_total"), 0) << "(not reached on_admitted)";
  EXPECT_EQ(stat(registry_, "filter.l.fs.limit"), 1);
}

TEST_F(ChainRebuildTest, ALoweredQueueBoundKeepsWhoIsQueuedAndShedsNewArrivals) {
  start({semaphore(1, 10)});
  FakeFilterCallbacks a(worker_), b(worker_), c(worker_), d(worker_);
  auto fa = enter(0, a, FilterStatus::Continue);
  auto fb = enter(0, b, FilterStatus::Stop);
  auto fc = enter(0, c, FilterStatus::Stop);
  reload({semaphore(1, 1)});
  EXPECT_EQ(controller(0).gate().queued(), 2u);
  auto fd = enter(0, d, FilterStatus::Stop);
  ASSERT_NE(d.last_reject(), nullptr);
  EXPECT_EQ(d.last_reject()->message, "fs: queue full (1 waiting)");
  EXPECT_TRUE(b.rejects.empty());
  EXPECT_TRUE(c.rejects.empty());
}

TEST_F(ChainRebuildTest, ARequestKeepsTheRulesOfTheChainItStartedUnder) {
  start({semaphore(1)});
  FakeFilterCallbacks a(worker_), b(worker_);
  auto fa = enter(0, a, FilterStatus::Continue);
  auto old = reload({semaphore(5)});
  // The old chain (held by requests in flight) shares the state with the new one.
  EXPECT_EQ(&dynamic_cast<LimiterFilterFactory&>(old->factory(0)).controller(), &controller(0));
  auto fb = enter(0, b, FilterStatus::Continue);
  EXPECT_EQ(controller(0).gate().in_flight(), 2u);
  fa->on_complete(RequestOutcome{});
  fb->on_complete(RequestOutcome{});
  EXPECT_EQ(controller(0).gate().in_flight(), 0u);
}

TEST_F(ChainRebuildTest, ANewTypeUnderAnOldNameStartsFreshAndItsGaugesReadTheNewState) {
  start({semaphore(3, 100, "x")});
  AdmissionController* old = &controller(0);
  reload({gradient(7, 1, 50, "x")});
  EXPECT_NE(&controller(0), old);
  EXPECT_EQ(controller(0).gate().limit(), 7u);
  EXPECT_EQ(stat(registry_, "filter.l.x.limit"), 7);
}

TEST_F(ChainRebuildTest, NewFiltersAreBuiltFirstAndAFailureChangesNothingRunning) {
  start({semaphore(1)});
  EXPECT_THROW(
      ChainRebuild(chain_, configs_,
                   {semaphore(9), FilterConfig{"bad", "token_bucket", FixedSemaphoreConfig{}}}, "l",
                   registry_, clock_),
      std::invalid_argument);
  EXPECT_EQ(controller(0).gate().limit(), 1u) << "the kept filter was not touched";
}

TEST_F(ChainRebuildTest, RemovedAndAddedFiltersAndOrder) {
  start({budget(5ms), semaphore(2)});
  const FilterFactory* fs = &chain_->factory(1);
  reload({semaphore(2), gradient(10, 1, 100)});
  ASSERT_EQ(chain_->size(), 2u);
  EXPECT_EQ(&chain_->factory(0), fs) << "moved to the front, still the same";
  EXPECT_EQ(chain_->factory(1).type(), "rtt_gradient");
  reload({});
  EXPECT_EQ(chain_, nullptr) << "no filters: no chain";
}

TEST_F(ChainRebuildTest, RttGradientKeepsItsLimitClampedAndItsBaselines) {
  start({gradient(20, 1, 100)});
  AdmissionController& c = controller(0);
  // Teach it a baseline: steady 10 ms answers at concurrency 1 (no queue: the limit holds).
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 10; ++i) c.on_sample(worker_, 0, "/a.B/C", 10ms, 1, 1, false);
    clock_.advance(15ms);
    c.flush_all();
  }
  const auto before = c.snapshot();
  ASSERT_EQ(before->baselines.size(), 1u);
  ASSERT_EQ(before->limit, 20u);

  reload({gradient(5, 1, 100)});  // a new initial_limit does not reset the running limit
  auto after = controller(0).snapshot();
  EXPECT_EQ(&controller(0), &c);
  EXPECT_EQ(after->limit, 20u);
  ASSERT_EQ(after->baselines.size(), 1u);
  EXPECT_EQ(after->baselines[0].rtt_noload_ms, before->baselines[0].rtt_noload_ms);

  reload({gradient(5, 1, 12)});
  EXPECT_EQ(controller(0).snapshot()->limit, 12u) << "clamped into the new max_limit";
  EXPECT_EQ(controller(0).gate().limit(), 12u);
  reload({gradient(30, 15, 40)});
  EXPECT_EQ(controller(0).gate().limit(), 15u) << "clamped up to the new min_limit";
  EXPECT_EQ(stat(registry_, "filter.l.rg.limit_changes_total"), 2);
}

}  // namespace
}  // namespace sluice
