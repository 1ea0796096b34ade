#include "tools/loadgen/run_summary.h"

#include <gtest/gtest.h>

namespace sluice::loadgen {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kOk = 0;
constexpr int kDeadlineExceeded = 4;
constexpr int kResourceExhausted = 8;

CallRecord call(size_t phase, int64_t start_ms, int64_t latency_ms, int status,
                std::optional<int64_t> queue_us = std::nullopt) {
  CallRecord r;
  r.phase = phase;
  r.scheduled = milliseconds(start_ms);
  r.start = milliseconds(start_ms);
  r.end = milliseconds(start_ms + latency_ms);
  r.status = status;
  r.queue_us = queue_us;
  return r;
}

CallRecord skipped(size_t phase, RecordKind kind) {
  CallRecord r;
  r.phase = phase;
  r.kind = kind;
  return r;
}

class RunSummaryTest : public ::testing::Test {
 protected:
  RunSummaryTest()
      : summary_({{"normal", seconds(0), seconds(10)}, {"slow", seconds(10), seconds(12)}}) {}
  const boost::json::object& phase(const boost::json::object& out, size_t i) {
    return out.at("phases").as_array().at(i).as_object();
  }
  RunSummary summary_;
};

TEST_F(RunSummaryTest, CountsOutcomesAndGoodputPerPhase) {
  for (int i = 0; i < 20; ++i) summary_.add(call(0, i * 100, 10 + i, kOk));
  summary_.add(call(0, 5000, 80, kDeadlineExceeded));
  summary_.add(call(1, 10000, 1, kResourceExhausted, 250));
  summary_.add(call(1, 10100, 30, kOk, 1500));
  summary_.add(skipped(1, RecordKind::kSkippedCap));
  summary_.add(skipped(1, RecordKind::kSkippedLate));
  auto out = summary_.to_json();

  const auto& normal = phase(out, 0);
  EXPECT_EQ(normal.at("name").as_string(), "normal");
  EXPECT_EQ(normal.at("calls").to_number<uint64_t>(), 21u);
  EXPECT_EQ(normal.at("ok").to_number<uint64_t>(), 20u);
  EXPECT_EQ(normal.at("timed_out").to_number<uint64_t>(), 1u);
  EXPECT_EQ(normal.at("status").at("DEADLINE_EXCEEDED").to_number<uint64_t>(), 1u);
  EXPECT_DOUBLE_EQ(normal.at("goodput_per_s").to_number<double>(), 2.0);  // 20 OK in 10 s
  // OK latencies 10..29 ms: nearest-rank p50 is the 10th (19), p95 the 19th (28).
  const auto& lat = normal.at("ok_latency_ms").as_object();
  EXPECT_EQ(lat.at("n").to_number<uint64_t>(), 20u);
  EXPECT_DOUBLE_EQ(lat.at("p50").to_number<double>(), 19);
  EXPECT_DOUBLE_EQ(lat.at("p95").to_number<double>(), 28);
  EXPECT_DOUBLE_EQ(lat.at("max").to_number<double>(), 29);

  const auto& slow = phase(out, 1);
  EXPECT_EQ(slow.at("slots").to_number<uint64_t>(), 4u);
  EXPECT_EQ(slow.at("calls").to_number<uint64_t>(), 2u);
  EXPECT_EQ(slow.at("skipped_cap").to_number<uint64_t>(), 1u);
  EXPECT_EQ(slow.at("skipped_late").to_number<uint64_t>(), 1u);
  EXPECT_EQ(slow.at("shed").to_number<uint64_t>(), 1u);
  EXPECT_DOUBLE_EQ(slow.at("offered_per_s").to_number<double>(), 2.0);  // 4 slots in 2 s
  EXPECT_DOUBLE_EQ(slow.at("queue_wait_ms").at("max").to_number<double>(), 1.5);
  EXPECT_EQ(slow.at("ok_queue_wait_ms").at("n").to_number<uint64_t>(), 1u);
}

TEST_F(RunSummaryTest, TimedOutCallsAreCountedButNeverGivenAnOkLatency) {
  summary_.add(call(0, 0, 5, kOk));
  summary_.add(call(0, 10, 80, kDeadlineExceeded));
  summary_.add(call(0, 20, 81, kDeadlineExceeded));
  auto out = summary_.to_json();
  const auto& normal = phase(out, 0);
  EXPECT_EQ(normal.at("timed_out").to_number<uint64_t>(), 2u);
  EXPECT_EQ(normal.at("ok_latency_ms").at("n").to_number<uint64_t>(), 1u);
  EXPECT_DOUBLE_EQ(normal.at("ok_latency_ms").at("max").to_number<double>(), 5);
  // Their observed durations are reported apart, under their own status.
  const auto& failed = normal.at("failed_duration_ms").at("DEADLINE_EXCEEDED").as_object();
  EXPECT_EQ(failed.at("n").to_number<uint64_t>(), 2u);
  EXPECT_DOUBLE_EQ(failed.at("max").to_number<double>(), 81);
}

TEST_F(RunSummaryTest, OverallCoversEveryPhaseAndTheirWholeWindow) {
  summary_.add(call(0, 0, 5, kOk));
  summary_.add(call(1, 10000, 5, kOk));
  summary_.add(skipped(1, RecordKind::kSkippedCap));
  auto out = summary_.to_json();
  const auto& overall = out.at("overall").as_object();
  EXPECT_EQ(overall.at("slots").to_number<uint64_t>(), 3u);
  EXPECT_EQ(overall.at("ok").to_number<uint64_t>(), 2u);
  EXPECT_DOUBLE_EQ(overall.at("window_s").to_number<double>(), 12);
  EXPECT_DOUBLE_EQ(overall.at("goodput_per_s").to_number<double>(), 2.0 / 12);
}

TEST_F(RunSummaryTest, CallsWithoutTheQueueHeaderLeaveQueueWaitEmpty) {
  summary_.add(call(0, 0, 5, kOk));
  auto out = summary_.to_json();
  const auto& q = phase(out, 0).at("queue_wait_ms").as_object();
  EXPECT_EQ(q.at("n").to_number<uint64_t>(), 0u);
  EXPECT_TRUE(q.at("p95").is_null());
}

}  // namespace
}  // namespace sluice::loadgen
