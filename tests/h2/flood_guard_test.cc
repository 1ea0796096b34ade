#include "src/h2/flood_guard.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::h2 {
namespace {

using Verdict = FloodGuard::Verdict;

constexpr uint8_t kData = 0x0, kHeaders = 0x1, kPriority = 0x2, kPing = 0x6, kWindowUpdate = 0x8,
                  kContinuation = 0x9;
constexpr uint8_t kEndStream = 0x1, kEndHeaders = 0x4, kPadded = 0x8;

// One frame on the wire: 9-byte header, then `payload`.
std::vector<uint8_t> frame(uint8_t type, uint8_t flags, uint32_t stream,
                           std::vector<uint8_t> payload = {}) {
  const auto n = static_cast<uint32_t>(payload.size());
  // Sized up front and filled by index: GCC 12 at -O3 warns falsely (-Warray-bounds) about
  // vector::insert after a 9-byte initializer list.
  std::vector<uint8_t> out(9 + payload.size());
  out[0] = static_cast<uint8_t>(n >> 16);
  out[1] = static_cast<uint8_t>(n >> 8);
  out[2] = static_cast<uint8_t>(n);
  out[3] = type;
  out[4] = flags;
  out[5] = static_cast<uint8_t>(stream >> 24);
  out[6] = static_cast<uint8_t>(stream >> 16);
  out[7] = static_cast<uint8_t>(stream >> 8);
  out[8] = static_cast<uint8_t>(stream);
  std::copy(payload.begin(), payload.end(), out.begin() + 9);
  return out;
}

std::vector<uint8_t> operator+(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

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
