// QueueLimit's rules one at a time, driven through a real QueueEstimator with answers and
// readings on fake time (what AdmissionController hands it). The whole law against traffic is the
// issue 32 scorecard (tests/filters/sim/adaptive_limit_scorecard.cc).
#include "filters/rtt_gradient/queue_limit.h"

#include <gtest/gtest.h>

#include <deque>
#include <optional>
#include <string>

namespace sluice {
namespace {

using namespace std::chrono_literals;

class QueueLimitTest : public ::testing::Test {
 protected:
  // A call admitted at `admitted` answered after `rtt`.
  void answer(TimePoint admitted, Duration rtt, uint32_t admitted_at, bool waited = false) {
    LatencySample s;
    s.method = 1;
    s.rtt = rtt;
    s.admitted = admitted;
    s.admitted_at = admitted_at;
    s.concurrency = admitted_at;
    s.waited = waited;
    estimator_.add(admitted + rtt, s);
    limit_.on_sample(admitted + rtt, s);
  }
  void read(TimePoint now, uint32_t in_flight, std::optional<TimePoint> oldest = std::nullopt,
            std::optional<TimePoint> second = std::nullopt) {
    estimator_.on_load(now, oldest);
    LoadReading r;
    r.now = now;
    r.in_flight = in_flight;
    r.oldest_unanswered = oldest;
    r.oldest_method = 1;
    r.second_unanswered = second;
    r.estimator = &estimator_;
    limit_.on_load(r);
  }
  // `n` calls of 10 ms, one at a time every 20 ms from `from`: a ready baseline, no queue.
  TimePoint alone(TimePoint from, int n) {
    for (int i = 0; i < n; ++i) {
      answer(from, 10ms, 1);
      read(from + 10ms, 0);
      from += 20ms;
    }
    read(from + 1s, 0);
    return from + 1s;
  }

  QueueEstimator estimator_{QueueEstimator::Options{}};
  QueueLimit limit_{QueueLimit::Options{}};
  TimePoint t0_ = TimePoint{} + 1s;
};

TEST_F(QueueLimitTest, AnIdleLimitFollowsTheLoadNotTheInitialLimit) {
  EXPECT_EQ(limit_.limit(), 20u);
  const TimePoint t = alone(t0_, 20);
  // One call in flight at a time: at most max(2 x 1, 1 + kDemandSlack).
  EXPECT_EQ(limit_.limit(), 1 + QueueLimit::kDemandSlack) << limit_.last_reason();
  // A window without a call in flight: the peak is 0, the limit its slack.
  read(t + QueueLimit::kPeakWindow + 1s, 0);
  EXPECT_EQ(limit_.limit(), QueueLimit::kDemandSlack);
  read(t + QueueLimit::kPeakWindow + 1s, 1);
  EXPECT_EQ(limit_.limit(), QueueLimit::kDemandSlack);
  const TimePoint u = t + QueueLimit::kPeakWindow + 1s;
  for (int i = 0; i < 5; ++i) answer(u, 10ms, 3, /*waited=*/true);  // grows per answer...
  read(u + 10ms, 3);  // ...up to the bound of the peak: max(2 x 3, 3 + kDemandSlack)
  EXPECT_EQ(limit_.limit(), 3 + QueueLimit::kDemandSlack);
  EXPECT_TRUE(limit_.last_change_bound());  // lowered to the bound: not a cut for a queue
}

TEST_F(QueueLimitTest, TwoCallsOverdueHoldTheLimitAtTheCallsInFlight) {
  const TimePoint t = alone(t0_, 20);
  const uint32_t before = limit_.limit();
  // Three calls in flight, the oldest two far past twice the 10 ms no-load p99.
  read(t + 30ms, 3, t, t + 5ms);
  EXPECT_EQ(limit_.limit(), 3u);
  EXPECT_LT(limit_.limit(), before);
  // One overdue call is a slow call of a heavy tail as often as a queue: no hold (the limit stays
  // at the demand bound, max(2 x 3, 3 + kDemandSlack)).
  QueueLimit other{QueueLimit::Options{}};
  LoadReading r;
  r.now = t + 30ms;
  r.in_flight = 3;
  r.oldest_unanswered = t;
  r.oldest_method = 1;
  r.second_unanswered = t + 25ms;
  r.estimator = &estimator_;
  other.on_load(r);
  EXPECT_EQ(other.limit(), 3 + QueueLimit::kDemandSlack);
}

TEST_F(QueueLimitTest, AnswersOfCallsThatWaitedGrowTheLimitByOneEach) {
  const TimePoint t = alone(t0_, 20);
  const uint32_t before = limit_.limit();
  for (int i = 0; i < 3; ++i) answer(t + i * 1ms, 10ms, 2, /*waited=*/true);
  EXPECT_EQ(limit_.limit(), before + 3);
  // A slow answer (beyond twice the no-load p99) grows nothing and pauses the growth.
  answer(t + 5ms, 40ms, 2, true);
  answer(t + 6ms, 10ms, 2, true);
  EXPECT_EQ(limit_.limit(), before + 3);
}

// A burst at an idle service: while nothing says queue, a refused call is admitted at once (the
// limit rises to every call waiting), not after the next answer.
TEST_F(QueueLimitTest, ARefusedCallIsAdmittedWhileNothingSaysQueue) {
  const TimePoint t = alone(t0_, 20);
  ASSERT_TRUE(limit_.grows_on_refusal());
  limit_.on_refused(t, 5, 3);
  EXPECT_EQ(limit_.limit(), 8u);
  // Not after a hold: two calls overdue say queue.
  read(t + 30ms, 6, t, t + 5ms);
  EXPECT_EQ(limit_.limit(), 6u);
  EXPECT_FALSE(limit_.grows_on_refusal());
  limit_.on_refused(t + 30ms, 6, 4);
  EXPECT_EQ(limit_.limit(), 6u);
}

// An overload of a one-worker upstream (10 ms calls, always more waiting than the limit lets in):
// the queue the limit lets form at the upstream is cut to the calls served plus headroom,
// floor(1.1 x 1 + 0.5) = 1, and probes past it are undone: over 5 s the limit is 1 most of the
// time and never above 2.
TEST_F(QueueLimitTest, AQueueAtTheLimitIsCutToTheCallsServed) {
  TimePoint t = alone(t0_, 40);
  limit_.on_demand_pressure(t);
  std::deque<std::pair<TimePoint, uint32_t>> in_flight;  // FIFO: the front one is served
  TimePoint busy_until = t;
  int at_one = 0, steps = 0;
  uint32_t highest_late = 0;
  for (TimePoint now = t; now < t + 5s; now += 1ms) {
    while (!in_flight.empty() && busy_until <= now) {
      const auto [admitted, at] = in_flight.front();
      in_flight.pop_front();
      answer(admitted, now - admitted, at, /*waited=*/true);
      busy_until = now + 10ms;
    }
    while (in_flight.size() < limit_.limit()) {
      if (in_flight.empty()) busy_until = now + 10ms;
      in_flight.emplace_back(now, static_cast<uint32_t>(in_flight.size()) + 1);
    }
    std::optional<TimePoint> oldest, second;
    if (!in_flight.empty()) oldest = in_flight.front().first;
    if (in_flight.size() > 1) second = in_flight[1].first;
    read(now, static_cast<uint32_t>(in_flight.size()), oldest, second);
    if (now > t + 1s) {
      ++steps;
      at_one += limit_.limit() == 1 ? 1 : 0;
      highest_late = std::max(highest_late, limit_.limit());
    }
  }
  EXPECT_LE(highest_late, 2u) << limit_.describe_last_decision();
  EXPECT_GE(at_one, steps * 3 / 4) << limit_.describe_last_decision();
}

}  // namespace
}  // namespace sluice
