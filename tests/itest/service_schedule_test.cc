#include "integration/upstream/service_schedule.h"

#include <gtest/gtest.h>

namespace sluice::itest {
namespace {

using namespace std::chrono_literals;

const TimePoint kT0{std::chrono::seconds(100)};

ServiceSchedule make(std::string_view text, ScheduleStart start) {
  auto steps = ServiceSchedule::parse(text);
  EXPECT_TRUE(steps.has_value()) << text;
  return ServiceSchedule(Duration::zero(), steps.value_or(std::vector<ScheduleStep>{}), start, kT0);
}

TEST(ItestServiceScheduleTest, ParsesServiceTimeAndLengthPairs) {
  auto steps = ServiceSchedule::parse("10ms:12s,40ms:12s,10ms:1.5s");
  ASSERT_TRUE(steps);
  ASSERT_EQ(steps->size(), 3u);
  EXPECT_EQ((*steps)[1].service_time, Duration(40ms));
  EXPECT_EQ((*steps)[1].length, Duration(12s));
  EXPECT_EQ((*steps)[2].length, Duration(1500ms));
}

TEST(ItestServiceScheduleTest, RejectsMalformedSchedules) {
  for (const char* bad : {"", "10ms", "10ms:", ":1s", "10ms:0", "10ms:1s,", ",10ms:1s",
                          "10ms:1s,,20ms:1s", "abc:1s", "10ms:1s:2s"}) {
    EXPECT_EQ(ServiceSchedule::parse(bad), std::nullopt) << bad;
  }
}

TEST(ItestServiceScheduleTest, WithoutStepsEveryJobGetsTheDelay) {
  ServiceSchedule s(7ms, {}, ScheduleStart::kFirstRequest, kT0);
  EXPECT_EQ(s.service_time_at(kT0), Duration(7ms));
  EXPECT_EQ(s.service_time_at(kT0 + 1h), Duration(7ms));
}

TEST(ItestServiceScheduleTest, FirstRequestModeStartsTheClockAtTheFirstRequest) {
  ServiceSchedule s = make("10ms:12s,40ms:12s,10ms:12s", ScheduleStart::kFirstRequest);
  TimePoint first = kT0 + 30s;  // long after process start
  EXPECT_EQ(s.peek(first), Duration(10ms));
  s.note_request(first);
  EXPECT_EQ(s.service_time_at(first + 11s), Duration(10ms));
  EXPECT_EQ(s.service_time_at(first + 12s), Duration(40ms));
  EXPECT_EQ(s.service_time_at(first + 23s), Duration(40ms));
  EXPECT_EQ(s.service_time_at(first + 24s), Duration(10ms));
}

TEST(ItestServiceScheduleTest, OnlyTheFirstRequestStartsTheClock) {
  ServiceSchedule s = make("10ms:1s,40ms:1s", ScheduleStart::kFirstRequest);
  s.note_request(kT0);
  s.note_request(kT0 + 900ms);
  EXPECT_EQ(s.service_time_at(kT0 + 1s), Duration(40ms));
}

TEST(ItestServiceScheduleTest, ServiceTimeLookupStartsTheClockToo) {
  ServiceSchedule s = make("10ms:1s,40ms:1s", ScheduleStart::kFirstRequest);
  EXPECT_EQ(s.service_time_at(kT0 + 5s), Duration(10ms));
  EXPECT_EQ(s.service_time_at(kT0 + 6s), Duration(40ms));
}

TEST(ItestServiceScheduleTest, ProcessModeCountsFromProcessStart) {
  ServiceSchedule s = make("10ms:2s,40ms:2s", ScheduleStart::kProcessStart);
  s.note_request(kT0 + 3s);  // ignored: the clock already runs
  EXPECT_EQ(s.service_time_at(kT0 + 3s), Duration(40ms));
}

TEST(ItestServiceScheduleTest, LastStepHoldsAfterTheScheduleEnds) {
  ServiceSchedule s = make("10ms:1s,40ms:1s", ScheduleStart::kProcessStart);
  EXPECT_EQ(s.service_time_at(kT0 + 1h), Duration(40ms));
}

TEST(ItestServiceScheduleTest, RestartInFirstRequestModeWaitsForTheNextRequest) {
  ServiceSchedule s = make("10ms:1s,40ms:1s", ScheduleStart::kFirstRequest);
  s.note_request(kT0);
  EXPECT_EQ(s.service_time_at(kT0 + 1500ms), Duration(40ms));
  s.restart(kT0 + 2s);
  s.note_request(kT0 + 10s);
  EXPECT_EQ(s.service_time_at(kT0 + 10500ms), Duration(10ms));
}

TEST(ItestServiceScheduleTest, RestartInProcessModeStartsNow) {
  ServiceSchedule s = make("10ms:1s,40ms:1s", ScheduleStart::kProcessStart);
  s.restart(kT0 + 10s);
  EXPECT_EQ(s.peek(kT0 + 10500ms), Duration(10ms));
  EXPECT_EQ(s.peek(kT0 + 11500ms), Duration(40ms));
}

}  // namespace
}  // namespace sluice::itest
