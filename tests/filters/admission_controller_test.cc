#include "filters/admission_controller.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <string>

#include "tests/fakes/fake_dispatcher.h"
#include "tests/filters/stat_reader.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

// A limit algorithm that records what it is told and moves its limit when told to.
class ScriptedLimiter final : public Limiter {
 public:
  void on_sample(TimePoint, const LatencySample& sample) override {
    ++samples;
    last_rtt = sample.rtt;
    last_in_flight = sample.admitted_at;
    last_concurrency = sample.concurrency;
    last_method = sample.method;
    if (next_limit) {
      limit_ = *next_limit;
      reason_ = "scripted";
      fast_ = next_fast;
    }
  }
  void on_drop(TimePoint, Duration in_flight_for, uint64_t) override {
    ++drops;
    last_drop = in_flight_for;
  }
  void on_demand_pressure(TimePoint) override { ++pressure; }
  void on_load(const LoadReading& r) override {
    ++loads;
    last_load = r;
    if (next_load_limit) limit_ = *next_load_limit;
  }
  std::optional<Duration> overdue_after() const override { return overdue; }
  bool grows_on_refusal() const override { return grows; }
  void on_refused(TimePoint, uint32_t in_flight, uint32_t queued) override {
    ++refusals;
    last_refused = {in_flight, queued};
    limit_ = in_flight + queued;
  }
  void name_method(uint64_t method, std::string_view name) override {
    names[method] = std::string(name);
  }
  uint32_t limit() const override { return limit_; }
  LimiterState state() const override {
    LimiterState s;
    s.limit = limit_;
    s.rtt_noload_ms = 10.0;
    s.rtt_smoothed_ms = 12.5;
    s.gradient = 0.8;
    return s;
  }
  const std::string& last_reason() const override { return reason_; }
  bool last_change_fast() const override { return fast_; }
  // Declared like rtt_gradient's: the controller registers what the algorithm declares.
  std::vector<LimiterGauge> gauges() const override {
    return {{"rtt_noload_ms", "noload", &LimiterState::rtt_noload_ms},
            {"rtt_smoothed_ms", "smoothed", &LimiterState::rtt_smoothed_ms},
            {"gradient", "gradient", &LimiterState::gradient}};
  }

  int samples = 0;
  int drops = 0;
  Duration last_drop{};
  int pressure = 0;
  int loads = 0;
  LoadReading last_load;
  std::optional<Duration> overdue;
  std::optional<uint32_t> next_load_limit;
  bool grows = false;
  int refusals = 0;
  std::pair<uint32_t, uint32_t> last_refused;
  Duration last_rtt{};
  uint32_t last_in_flight = 0;
  uint32_t last_concurrency = 0;
  uint64_t last_method = 0;
  std::map<uint64_t, std::string> names;
  std::optional<uint32_t> next_limit;
  bool next_fast = false;

 private:
  uint32_t limit_ = 2;
  std::string reason_;
  bool fast_ = false;
};

class AdmissionControllerTest : public ::testing::Test {
 protected:
  AdmissionControllerTest() {
    auto l = std::make_unique<ScriptedLimiter>();
    limiter_ = l.get();
    AdmissionController::Options o;
    o.listener = "ingress";
    o.filter = "adaptive";
    o.type = "rtt_gradient";
    o.max_queue = 1;
    controller_ = std::make_unique<AdmissionController>(o, std::move(l), registry_, clock_);
  }
  PermitGate::Acquisition acquire() {
    return controller_->acquire(worker_, Criticality::Critical, [](Permit) {});
  }

  FakeClock clock_;
  FakeDispatcher worker_{clock_, 0};
  StatsRegistry registry_;
  ScriptedLimiter* limiter_ = nullptr;
  std::unique_ptr<AdmissionController> controller_;
};

TEST_F(AdmissionControllerTest, GateStartsAtTheAlgorithmsLimit) {
  EXPECT_EQ(controller_->gate().limit(), 2u);
}

TEST_F(AdmissionControllerTest, WaitingOrRejectedRequestsAreDemandPressure) {
  auto a = acquire();
  auto b = acquire();
  controller_->on_sample(worker_, 0, "/m", 7ms, 2, 2, false);
  worker_.run_pending();
  EXPECT_EQ(limiter_->pressure, 0);
  auto c = acquire();  // queued
  auto d = acquire();  // rejected
  EXPECT_EQ(c.status, PermitGate::Status::Queued);
  EXPECT_EQ(d.status, PermitGate::Status::Rejected);
  // Pressure is a flag, not a lock: the algorithm hears it once, with the next flush.
  controller_->on_sample(worker_, 0, "/m", 7ms, 2, 2, false);
  worker_.run_pending();
  EXPECT_EQ(limiter_->pressure, 1);
}

TEST_F(AdmissionControllerTest, SamplesOfOneLoopTurnReachTheAlgorithmInOneFlush) {
  for (int i = 0; i < 5; ++i) controller_->on_sample(worker_, 0, "/pkg.Svc/Get", 7ms, 3, 2, false);
  EXPECT_EQ(limiter_->samples, 0);  // nothing under the lock yet: the flush is posted
  EXPECT_EQ(worker_.posted(), 1u);  // one flush for the turn, not one per sample
  worker_.run_pending();
  EXPECT_EQ(limiter_->samples, 5);
  EXPECT_EQ(limiter_->last_concurrency, 3u);
  EXPECT_EQ(limiter_->last_in_flight, 2u);
  EXPECT_EQ(limiter_->last_method, method_key("/pkg.Svc/Get"));
  EXPECT_EQ(limiter_->names[method_key("/pkg.Svc/Get")], "/pkg.Svc/Get");
  EXPECT_EQ(stat(registry_, "filter.ingress.adaptive.rtt_samples_total"), 5);
}

TEST_F(AdmissionControllerTest, EveryWorkerFeedsItsOwnShard) {
  FakeDispatcher other(clock_, 1);
  controller_->on_sample(worker_, 0, "/a", 7ms, 1, 1, false);
  controller_->on_sample(other, 0, "/b", 9ms, 1, 1, false);
  EXPECT_EQ(worker_.posted(), 1u);
  EXPECT_EQ(other.posted(), 1u);
  other.run_pending();
  EXPECT_EQ(limiter_->samples, 1);
  EXPECT_EQ(limiter_->last_rtt, Duration(9ms));
  worker_.run_pending();
  EXPECT_EQ(limiter_->samples, 2);
}

TEST_F(AdmissionControllerTest, FlushPostedAfterTheControllerIsGoneDoesNothing) {
  controller_->on_sample(worker_, 0, "/a", 7ms, 1, 1, false);
  controller_.reset();
  EXPECT_EQ(worker_.run_pending(), 1u);  // ran, found the controller gone
}

TEST_F(AdmissionControllerTest, LimitChangesReachTheGateAndAreCountedAndLogged) {
  limiter_->next_limit = 5;
  clock_.advance(1s);
  controller_->on_sample(worker_, 0, "/m", 7ms, 2, 2, false);
  worker_.run_pending();
  EXPECT_EQ(limiter_->last_rtt, Duration(7ms));
  EXPECT_EQ(limiter_->last_in_flight, 2u);
  EXPECT_EQ(controller_->gate().limit(), 5u);
  EXPECT_EQ(stat(registry_, "filter.ingress.adaptive.limit_changes_total"), 1);
  EXPECT_EQ(stat(registry_, "filter.ingress.adaptive.limit"), 5);
  auto snap = controller_->snapshot();
  ASSERT_EQ(snap->recent_decisions.size(), 1u);
  EXPECT_EQ(snap->recent_decisions[0].old_limit, 2u);
  EXPECT_EQ(snap->recent_decisions[0].new_limit, 5u);
  EXPECT_EQ(snap->recent_decisions[0].reason, "scripted");
  EXPECT_EQ(snap->recent_decisions[0].at, clock_.now());
  controller_->on_sample(worker_, 0, "/m", 7ms, 2, 2, false);  // same limit: no new decision
  worker_.run_pending();
  EXPECT_EQ(controller_->snapshot()->recent_decisions.size(), 1u);
}

TEST_F(AdmissionControllerTest, LimitChangesAreCountedByDirection) {
  const auto change = [this](uint32_t to, bool fast) {
    limiter_->next_limit = to;
    limiter_->next_fast = fast;
    controller_->on_sample(worker_, 0, "/m", 7ms, 2, 2, false);
    worker_.run_pending();
  };
  change(6, false);  // 2 -> 6
  change(4, false);  // a decision's decrease
  change(2, true);   // a fast decrease
  change(3, false);
  change(3, true);  // no change: nothing counted, whatever the algorithm says
  EXPECT_EQ(stat(registry_, "filter.ingress.adaptive.limit_increase_total"), 2);
  EXPECT_EQ(stat(registry_, "filter.ingress.adaptive.limit_decrease_total"), 1);
  EXPECT_EQ(stat(registry_, "filter.ingress.adaptive.limit_fast_decrease_total"), 1);
  EXPECT_EQ(stat(registry_, "filter.ingress.adaptive.limit_changes_total"), 4);
}

TEST_F(AdmissionControllerTest, PublishesTheAlgorithmsStateAsGaugesAndInSnapshots) {
  controller_->on_drop(worker_, 0, "/m", 30ms, 1);
  worker_.run_pending();
  EXPECT_EQ(limiter_->drops, 1);
  EXPECT_EQ(limiter_->last_drop, Duration(30ms));
  EXPECT_DOUBLE_EQ(stat(registry_, "filter.ingress.adaptive.rtt_noload_ms"), 10.0);
  EXPECT_DOUBLE_EQ(stat(registry_, "filter.ingress.adaptive.rtt_smoothed_ms"), 12.5);
  EXPECT_DOUBLE_EQ(stat(registry_, "filter.ingress.adaptive.gradient"), 0.8);
  auto a = acquire();
  auto snap = controller_->snapshot();
  EXPECT_EQ(snap->listener, "ingress");
  EXPECT_EQ(snap->filter, "adaptive");
  EXPECT_EQ(snap->type, "rtt_gradient");
  EXPECT_EQ(snap->in_flight, 1u);
  EXPECT_EQ(snap->limit, 2u);
  EXPECT_DOUBLE_EQ(snap->gradient.value_or(0), 0.8);
}

// The queue estimator reads what the tickets say: first calls one at a time (10 ms, the
// baseline), then four in flight at a one-worker upstream (40 ms each, one answer every 10 ms).
TEST_F(AdmissionControllerTest, TheEstimatorReadsTheQueueOfTheCallsInFlight) {
  for (int i = 0; i < 40; ++i) {
    const uint64_t t = controller_->on_admitted(worker_, "/m");
    clock_.advance(10ms);
    controller_->on_sample(worker_, t, "/m", 10ms, 1, 1, false);
    worker_.run_pending();
  }
  auto snap = controller_->snapshot();
  EXPECT_NEAR(snap->queue_calls.value_or(-1), 0, 0.05);
  struct Call {
    uint64_t ticket;
    TimePoint admitted;
    uint32_t admitted_at;
  };
  std::deque<Call> in_flight;
  for (int i = 0; i < 200; ++i) {
    const uint32_t at = static_cast<uint32_t>(in_flight.size()) + 1;
    in_flight.push_back(Call{controller_->on_admitted(worker_, "/m"), clock_.now(), at});
    if (in_flight.size() == 4) {
      clock_.advance(10ms);
      const Call c = in_flight.front();
      controller_->on_sample(worker_, c.ticket, "/m", clock_.now() - c.admitted, 4, c.admitted_at,
                             i >= 4);
      in_flight.pop_front();
      worker_.run_pending();
    }
  }
  snap = controller_->snapshot();
  // One cohort of about 8 calls (7 or 8 fit its span): 3 waiting for each one served.
  ASSERT_TRUE(snap->queue_calls && snap->service_calls);
  EXPECT_NEAR(*snap->queue_calls / *snap->service_calls, 3, 0.05);
  EXPECT_NEAR(*snap->queue_calls + *snap->service_calls, 4, 0.6);
  EXPECT_NEAR(snap->queue_delay_ms.value_or(-1), 30, 0.5);
  EXPECT_DOUBLE_EQ(stat(registry_, "filter.ingress.adaptive.queue_calls"), *snap->queue_calls);
}

// A call still unanswered holds back the cohort it was admitted in, whatever answered after it;
// once it ends (here without an answer), the cohort is judged.
TEST_F(AdmissionControllerTest, AnUnansweredCallHoldsItsCohortBack) {
  const uint64_t stuck = controller_->on_admitted(worker_, "/m");
  FakeDispatcher other(clock_, 1);
  for (int i = 0; i < 40; ++i) {
    const uint64_t t = controller_->on_admitted(other, "/m");
    clock_.advance(10ms);
    controller_->on_sample(other, t, "/m", 10ms, 2, 2, false);
    other.run_pending();
  }
  EXPECT_FALSE(controller_->snapshot()->queue_calls.has_value());
  controller_->on_unanswered_end(worker_, stuck);
  clock_.advance(10ms);
  worker_.run_pending();
  EXPECT_TRUE(controller_->snapshot()->queue_calls.has_value());
}

// A call in flight past the algorithm's overdue_after() gives the algorithm a reading before the
// next admission, without any answer: an onset is heard by the calls it holds.
TEST_F(AdmissionControllerTest, AnOverdueCallGivesAReadingBeforeTheNextAdmission) {
  limiter_->overdue = 50ms;
  // One answered call first: the controller learns overdue_after() at a flush.
  auto first_call = acquire();
  const uint64_t t = controller_->on_admitted(worker_, "/pkg.Svc/Slow");
  controller_->on_sample(worker_, t, "/pkg.Svc/Slow", 5ms, 1, 1, false);
  first_call.permit.release();
  worker_.run_pending();
  limiter_->loads = 0;
  const TimePoint first = clock_.now();
  auto a = acquire();
  controller_->on_admitted(worker_, "/pkg.Svc/Slow");
  clock_.advance(40ms);
  auto b = acquire();  // not overdue yet
  controller_->on_admitted(worker_, "/pkg.Svc/Slow");
  EXPECT_EQ(limiter_->loads, 0);
  clock_.advance(20ms);
  limiter_->next_load_limit = 1;  // the algorithm holds: no admission before an answer
  auto c = acquire();
  EXPECT_EQ(limiter_->loads, 1);
  EXPECT_EQ(c.status, PermitGate::Status::Queued);  // the reading came before the admission
  EXPECT_EQ(limiter_->last_load.in_flight, 2u);
  ASSERT_TRUE(limiter_->last_load.oldest_unanswered.has_value());
  EXPECT_EQ(*limiter_->last_load.oldest_unanswered, first);
  ASSERT_TRUE(limiter_->last_load.second_unanswered.has_value());
  EXPECT_EQ(*limiter_->last_load.second_unanswered, first + 40ms);
  EXPECT_EQ(limiter_->last_load.oldest_method, method_key("/pkg.Svc/Slow"));
  EXPECT_NE(limiter_->last_load.estimator, nullptr);
  EXPECT_EQ(worker_.posted(), 0u);  // read at once, not posted
}

// An algorithm that sees no queue hears a refused call at once, and may admit it at once.
TEST_F(AdmissionControllerTest, ARefusedCallIsToldAtOnceToAnAlgorithmThatGrowsOnRefusal) {
  auto a = acquire();
  auto b = acquire();
  {
    auto c = acquire();  // queued: the algorithm does not grow on refusal yet
    EXPECT_EQ(c.status, PermitGate::Status::Queued);
    EXPECT_EQ(limiter_->refusals, 0);
  }  // the wait is cancelled: it leaves the queue
  limiter_->grows = true;
  controller_->on_sample(worker_, 0, "/m", 7ms, 2, 2, false);
  worker_.run_pending();  // the flag is read after every call into the algorithm
  bool granted = false;
  auto d = controller_->acquire(worker_, Criticality::Critical,
                                [&granted](Permit p) { granted = p.held(); });
  EXPECT_EQ(d.status, PermitGate::Status::Queued);
  EXPECT_EQ(limiter_->refusals, 1);
  EXPECT_EQ(limiter_->last_refused, std::make_pair(2u, 1u));
  EXPECT_EQ(controller_->gate().limit(), 3u);
  worker_.run_pending();
  EXPECT_TRUE(granted);  // admitted without waiting for an answer
}

TEST_F(AdmissionControllerTest, QueueFullReplyNamesTheFilterAndCarriesPushback) {
  const LocalReply r = controller_->queue_full_reply(false, 40ms);
  EXPECT_EQ(r.grpc_status, GrpcStatus::ResourceExhausted);
  EXPECT_EQ(r.message, "adaptive: queue full (1 waiting)");
  EXPECT_EQ(r.retry_pushback, Duration(40ms));
  EXPECT_EQ(r.reason, "queue_full");
  const LocalReply e = controller_->queue_full_reply(true, std::nullopt);
  EXPECT_EQ(e.message, "adaptive: queue full (1 waiting), shed for a more critical request");
  EXPECT_EQ(e.reason, "evicted");
}

TEST_F(AdmissionControllerTest, ErrorAndLocalAnswersAreCountedApartFromSamples) {
  controller_->on_error_answer();
  controller_->on_local_answer();
  controller_->on_local_answer();
  worker_.run_pending();
  EXPECT_EQ(limiter_->samples, 0);
  EXPECT_EQ(stat(registry_, "filter.ingress.adaptive.rtt_excluded_error_total"), 1);
  EXPECT_EQ(stat(registry_, "filter.ingress.adaptive.rtt_excluded_local_total"), 2);
}

TEST_F(AdmissionControllerTest, SnapshotCarriesPerClassCounts) {
  auto a = acquire();
  auto b = acquire();
  auto c = controller_->acquire(worker_, Criticality::Sheddable, [](Permit) {});
  controller_->stats().admitted(Criticality::CriticalPlus);
  controller_->stats().shed(Criticality::Sheddable, "queue_full");
  auto snap = controller_->snapshot();
  EXPECT_EQ(snap->classes[index_of(Criticality::Sheddable)].queued, 1u);
  EXPECT_EQ(snap->classes[index_of(Criticality::CriticalPlus)].admitted, 1u);
  EXPECT_EQ(snap->classes[index_of(Criticality::Sheddable)].shed, 1u);
  EXPECT_EQ(stat(registry_, "filter.ingress.adaptive.sheddable.class_shed_total"), 1);
}

TEST(AdmissionControllerFixedTest, FixedLimitIgnoresSamplesAndDrops) {
  FakeClock clock;
  StatsRegistry registry;
  AdmissionController::Options o;
  o.listener = "l";
  o.filter = "fs";
  o.type = "fixed_semaphore";
  o.limit = 3;
  AdmissionController c(o, nullptr, registry, clock);
  FakeDispatcher worker(clock, 0);
  c.on_sample(worker, 0, "/m", 5ms, 1, 1, false);
  c.on_drop(worker, 0, "/m", 5ms, 1);
  EXPECT_EQ(worker.posted(), 0u);  // nothing to feed
  EXPECT_EQ(c.gate().limit(), 3u);
  EXPECT_FALSE(find_stat(registry, "filter.l.fs.limit_changes_total").has_value());
  EXPECT_FALSE(find_stat(registry, "filter.l.fs.limit_increase_total").has_value());
  EXPECT_FALSE(c.snapshot()->rtt_noload_ms.has_value());
}

}  // namespace
}  // namespace sluice
