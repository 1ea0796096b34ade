#include "src/h2/flood_guard.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/h2/raw_frames.h"

namespace sluice::h2 {
namespace {

using namespace raw;  // NOLINT: frame helpers and constants

using Verdict = FloodGuard::Verdict;

Verdict feed(FloodGuard& g, const std::vector<uint8_t>& bytes) {
  return g.scan(bytes.data(), bytes.size());
}

// A request's HEADERS (the header block content does not matter to the guard).
std::vector<uint8_t> request(uint32_t stream) {
  return frame(kHeaders, kEndHeaders, stream, {0x82, 0x86, 0x84});
}

TEST(FloodGuardTest, OneEmptyDataFrameIsTolerated) {
  FloodGuard g({}, 0);
  EXPECT_EQ(feed(g, request(1) + frame(kData, 0, 1) + frame(kData, 0, 1, {1, 2})), Verdict::Ok);
}

TEST(FloodGuardTest, TwoEmptyDataFramesInARowAreAFlood) {
  FloodGuard g({}, 0);
  EXPECT_EQ(feed(g, request(1) + frame(kData, 0, 1) + frame(kData, 0, 1)), Verdict::EmptyFrames);
}

TEST(FloodGuardTest, EmptyDataWithEndStreamIsNotEmpty) {
  FloodGuard g({}, 0);
  EXPECT_EQ(feed(g, request(1) + frame(kData, 0, 1) + frame(kData, kEndStream, 1) + request(3) +
                        frame(kData, 0, 3)),
            Verdict::Ok);
}

TEST(FloodGuardTest, PaddingOnlyDataFramesCountAsEmpty) {
  FloodGuard g({}, 0);
  // Pad length 3, three bytes of padding, no content.
  const auto padded = frame(kData, kPadded, 1, {3, 0, 0, 0});
  EXPECT_EQ(feed(g, request(1) + padded + padded), Verdict::EmptyFrames);
}

TEST(FloodGuardTest, EmptyHeadersAndContinuationsCountTogether) {
  FloodGuard g({}, 0);
  EXPECT_EQ(feed(g, frame(kHeaders, 0, 1) + frame(kContinuation, 0, 1)), Verdict::EmptyFrames);
}

TEST(FloodGuardTest, OtherFramesDoNotBreakARunOfEmptyFrames) {
  FloodGuard g({}, 0);
  EXPECT_EQ(feed(g, request(1) + frame(kData, 0, 1) + frame(kPing, 0, 0, std::vector<uint8_t>(8)) +
                        frame(kData, 0, 1)),
            Verdict::EmptyFrames);
}

TEST(FloodGuardTest, FramesSplitAcrossReadsAreParsed) {
  FloodGuard g({}, 0);
  const auto bytes = request(1) + frame(kData, kPadded, 1, {1, 0}) + frame(kData, 0, 1);
  for (std::size_t i = 0; i + 1 < bytes.size(); ++i) {
    ASSERT_EQ(g.scan(&bytes[i], 1), Verdict::Ok) << "byte " << i;
  }
  EXPECT_EQ(g.scan(&bytes.back(), 1), Verdict::EmptyFrames);
}

TEST(FloodGuardTest, SkipsThePreface) {
  const std::string magic = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  FloodGuard g({}, magic.size());
  std::vector<uint8_t> bytes(magic.begin(), magic.end());
  EXPECT_EQ(feed(g, bytes + request(1) + frame(kData, 0, 1)), Verdict::Ok);
  EXPECT_EQ(feed(g, frame(kData, 0, 1)), Verdict::EmptyFrames);
}

TEST(FloodGuardTest, PriorityBudgetGrowsWithOpenedStreams) {
  FloodLimits limits;
  limits.max_priority_frames_per_stream = 2;
  FloodGuard g(limits, 0);
  const auto prio = frame(kPriority, 0, 5, {0, 0, 0, 0, 16});
  EXPECT_EQ(feed(g, prio + prio), Verdict::Ok);  // 2 x (1 + 0 streams)
  EXPECT_EQ(feed(g, request(1) + prio + prio), Verdict::Ok);
  EXPECT_EQ(feed(g, prio), Verdict::PriorityFlood);
}

TEST(FloodGuardTest, TrailersDoNotOpenAStream) {
  FloodLimits limits;
  limits.max_priority_frames_per_stream = 1;
  FloodGuard g(limits, 0);
  const auto prio = frame(kPriority, 0, 5, {0, 0, 0, 0, 16});
  // One stream: 1 x (1 + 1) PRIORITY frames; the trailers would make it 3.
  EXPECT_EQ(
      feed(g, request(1) + frame(kHeaders, kEndHeaders | kEndStream, 1, {0x40}) + prio + prio),
      Verdict::Ok);
  EXPECT_EQ(feed(g, prio), Verdict::PriorityFlood);
}

TEST(FloodGuardTest, WindowUpdateBudgetGrowsWithDataSent) {
  FloodGuard g({}, 0);
  const auto wu = frame(kWindowUpdate, 0, 0, {0, 0, 1, 0});
  for (int i = 0; i < 5; ++i) ASSERT_EQ(feed(g, wu), Verdict::Ok);
  EXPECT_EQ(feed(g, wu), Verdict::WindowUpdateFlood);

  FloodGuard h({}, 0);
  h.on_data_frame_sent();  // 5 + 2 * 10 allowed
  for (int i = 0; i < 25; ++i) ASSERT_EQ(feed(h, wu), Verdict::Ok);
  EXPECT_EQ(feed(h, wu), Verdict::WindowUpdateFlood);
}

TEST(FloodGuardTest, AViolationIsSticky) {
  FloodGuard g({}, 0);
  ASSERT_EQ(feed(g, frame(kData, 0, 1) + frame(kData, 0, 1)), Verdict::EmptyFrames);
  EXPECT_EQ(feed(g, request(3)), Verdict::EmptyFrames);
}

}  // namespace
}  // namespace sluice::h2
