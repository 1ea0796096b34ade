#include "tools/loadgen/arrival_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/loadgen/open_phase.h"

namespace sluice::loadgen {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::vector<Slot> all(ArrivalSchedule& s) {
  std::vector<Slot> slots;
  while (auto slot = s.next()) slots.push_back(*slot);
  return slots;
}

TEST(ArrivalScheduleTest, FixedRateProducesEvenlySpacedSlotsInsideThePhase) {
  ArrivalSchedule s({open_phase(4, seconds(1))}, ArrivalProcess::kFixed);
  auto slots = all(s);
  ASSERT_EQ(slots.size(), 4u);
  EXPECT_EQ(slots[0].offset, milliseconds(0));
  EXPECT_EQ(slots[1].offset, milliseconds(250));
  EXPECT_EQ(slots[3].offset, milliseconds(750));
}

TEST(ArrivalScheduleTest, EightyPerSecondForThirtySixSecondsIsExactly2880Slots) {
  ArrivalSchedule s({open_phase(80, seconds(36))}, ArrivalProcess::kFixed);
  auto slots = all(s);
  ASSERT_EQ(slots.size(), 2880u);
  EXPECT_EQ(slots.back().offset, milliseconds(35987) + std::chrono::microseconds(500));
  EXPECT_EQ(slots.back().index, 2879u);
}

TEST(ArrivalScheduleTest, PhasesFollowEachOtherAndSlotsCarryTheirPhase) {
  ArrivalSchedule s(
      {open_phase(2, seconds(1)), open_phase(0, seconds(2)), open_phase(1, seconds(2))},
      ArrivalProcess::kFixed);
  auto slots = all(s);
  ASSERT_EQ(slots.size(), 4u);
  EXPECT_EQ(slots[0].phase, 0u);
  EXPECT_EQ(slots[1].offset, milliseconds(500));
  // The pause (phase 1) offers nothing; phase 2 starts at 3 s.
  EXPECT_EQ(slots[2].phase, 2u);
  EXPECT_EQ(slots[2].offset, seconds(3));
  EXPECT_EQ(slots[3].offset, seconds(4));
  EXPECT_EQ(slots[3].index, 3u);
  EXPECT_EQ(s.phase_start(2), seconds(3));
  EXPECT_EQ(s.phase_end(2), seconds(5));
}

TEST(ArrivalScheduleTest, NoSlotFallsOnOrPastAPhaseEnd) {
  ArrivalSchedule s({open_phase(3, seconds(1)), open_phase(3, seconds(1))}, ArrivalProcess::kFixed);
  for (const Slot& slot : all(s)) {
    EXPECT_GE(slot.offset, s.phase_start(slot.phase));
    EXPECT_LT(slot.offset, s.phase_end(slot.phase));
  }
}

TEST(ArrivalScheduleTest, PoissonWithTheSameSeedRepeatsAndADifferentSeedDoesNot) {
  ArrivalSchedule a({open_phase(100, seconds(5))}, ArrivalProcess::kPoisson, 42);
  ArrivalSchedule b({open_phase(100, seconds(5))}, ArrivalProcess::kPoisson, 42);
  ArrivalSchedule c({open_phase(100, seconds(5))}, ArrivalProcess::kPoisson, 43);
  auto sa = all(a), sb = all(b), sc = all(c);
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) EXPECT_EQ(sa[i].offset, sb[i].offset);
  ASSERT_FALSE(sc.empty());
  EXPECT_NE(sa.front().offset, sc.front().offset);
}

TEST(ArrivalScheduleTest, PoissonGapsAreIrregularButAverageTheRate) {
  ArrivalSchedule s({open_phase(200, seconds(100))}, ArrivalProcess::kPoisson, 7);
  auto slots = all(s);
  // 20,000 expected; the standard deviation of a Poisson count is ~141, so +-3% is ~4 sigma.
  EXPECT_NEAR(static_cast<double>(slots.size()), 20000, 600);
  // Exponential gaps: their coefficient of variation is ~1, where fixed gaps would give 0.
  double sum = 0, sum2 = 0;
  for (size_t i = 1; i < slots.size(); ++i) {
    double gap = to_ms(slots[i].offset - slots[i - 1].offset);
    sum += gap;
    sum2 += gap * gap;
  }
  const double n = static_cast<double>(slots.size() - 1);
  const double mean = sum / n;
  const double cv = std::sqrt(sum2 / n - mean * mean) / mean;
  EXPECT_NEAR(mean, 5.0, 0.2);
  EXPECT_NEAR(cv, 1.0, 0.05);
}

TEST(ArrivalScheduleTest, PoissonArrivalsStayInsideTheirPhase) {
  ArrivalSchedule s({open_phase(50, seconds(1)), open_phase(50, seconds(1))},
                    ArrivalProcess::kPoisson, 3);
  auto slots = all(s);
  ASSERT_FALSE(slots.empty());
  for (size_t i = 0; i < slots.size(); ++i) {
    EXPECT_LT(slots[i].offset, s.phase_end(slots[i].phase));
    EXPECT_GE(slots[i].offset, s.phase_start(slots[i].phase));
    if (i > 0) {
      EXPECT_GE(slots[i].offset, slots[i - 1].offset);
    }
  }
  EXPECT_EQ(slots.back().phase, 1u);
}

}  // namespace
}  // namespace sluice::loadgen
