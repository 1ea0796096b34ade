#include "filters/admission_controller.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_dispatcher.h"
#include "tests/filters/stat_reader.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

// A limit algorithm that records what it is told and moves its limit when told to.
class ScriptedLimiter final : public Limiter {
 public:
  void on_sample(TimePoint, Duration rtt, uint32_t in_flight) override {
    ++samples;
    last_rtt = rtt;
    last_in_flight = in_flight;
    if (next_limit) {
      limit_ = *next_limit;
      reason_ = "scripted";
    }
  }
  void on_drop(TimePoint, Duration in_flight_for) override {
    ++drops;
    last_drop = in_flight_for;
  }
  void on_demand_pressure(TimePoint) override { ++pressure; }
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
  Duration last_rtt{};
  uint32_t last_in_flight = 0;
  std::optional<uint32_t> next_limit;

 private:
  uint32_t limit_ = 2;
  std::string reason_;
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
    o.retry_pushback = 40ms;
    controller_ = std::make_unique<AdmissionController>(o, std::move(l), registry_, clock_);
  }
  PermitGate::Acquisition acquire() {
    return controller_->acquire(worker_, [](Permit) {});
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
  EXPECT_EQ(limiter_->pressure, 0);
  auto c = acquire();  // queued
  auto d = acquire();  // rejected
  EXPECT_EQ(c.status, PermitGate::Status::Queued);
  EXPECT_EQ(d.status, PermitGate::Status::Rejected);
  EXPECT_EQ(limiter_->pressure, 2);
}

TEST_F(AdmissionControllerTest, LimitChangesReachTheGateAndAreCountedAndLogged) {
  limiter_->next_limit = 5;
  clock_.advance(1s);
  controller_->on_sample(7ms, 2);
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
  controller_->on_sample(7ms, 2);  // same limit: no new decision
  EXPECT_EQ(controller_->snapshot()->recent_decisions.size(), 1u);
}

TEST_F(AdmissionControllerTest, PublishesTheAlgorithmsStateAsGaugesAndInSnapshots) {
  controller_->on_drop(30ms);
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

TEST_F(AdmissionControllerTest, QueueFullReplyNamesTheFilterAndCarriesPushback) {
  const LocalReply r = controller_->queue_full_reply();
  EXPECT_EQ(r.grpc_status, GrpcStatus::ResourceExhausted);
  EXPECT_EQ(r.message, "adaptive: queue full (1 waiting)");
  EXPECT_EQ(r.retry_pushback, Duration(40ms));
  EXPECT_EQ(r.reason, "queue_full");
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
  c.on_sample(5ms, 1);
  c.on_drop(5ms);
  EXPECT_EQ(c.gate().limit(), 3u);
  EXPECT_FALSE(find_stat(registry, "filter.l.fs.limit_changes_total").has_value());
  EXPECT_FALSE(c.snapshot()->rtt_noload_ms.has_value());
}

}  // namespace
}  // namespace sluice
