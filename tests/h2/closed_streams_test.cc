#include "src/h2/closed_streams.h"

#include <gtest/gtest.h>

namespace sluice::h2 {
namespace {

using How = ClosedStreams::How;
using Verdict = ClosedStreams::Verdict;

TEST(ClosedStreams, FramesOnAStreamWeResetAreIgnored) {
  ClosedStreams c;
  c.opened(1);
  c.closed(1, How::LocalReset);
  EXPECT_EQ(c.judge(1, false), Verdict::Ignore);
  EXPECT_EQ(c.judge(1, true), Verdict::Ignore);
}

TEST(ClosedStreams, FramesAfterThePeerResetOrEndedAreStreamClosed) {
  ClosedStreams c;
  c.opened(1);
  c.opened(3);
  c.closed(1, How::PeerReset);
  c.closed(3, How::Ended);
  for (const bool headers : {false, true}) {
    EXPECT_EQ(c.judge(1, headers), Verdict::StreamClosed);
    EXPECT_EQ(c.judge(3, headers), Verdict::StreamClosed);
  }
}

TEST(ClosedStreams, SkippedIdsAreClosedWithoutEverOpening) {
  ClosedStreams c;
  c.opened(1);
  c.opened(7);  // 3 and 5 were never opened, and now never can be
  EXPECT_EQ(c.highest(), 7);
  EXPECT_EQ(c.judge(3, true), Verdict::ProtocolError);
  EXPECT_EQ(c.judge(5, true), Verdict::ProtocolError);
  EXPECT_EQ(c.judge(5, false), Verdict::StreamClosed);
  c.opened(5);  // not higher: changes nothing
  EXPECT_EQ(c.highest(), 7);
  EXPECT_EQ(c.judge(5, true), Verdict::ProtocolError);
}

TEST(ClosedStreams, AFirstStreamAboveOneSkipsTheLowerIds) {
  ClosedStreams c;
  c.opened(5);
  EXPECT_EQ(c.judge(1, true), Verdict::ProtocolError);
  EXPECT_EQ(c.judge(3, true), Verdict::ProtocolError);
}

TEST(ClosedStreams, ForgottenStreamsAreIgnoredAsNghttp2Would) {
  ClosedStreams c(/*capacity=*/2, /*max_gaps=*/1);
  for (int32_t id = 1; id <= 5; id += 2) {
    c.opened(id);
    c.closed(id, How::Ended);
  }
  EXPECT_EQ(c.judge(1, false), Verdict::Ignore);  // the oldest was forgotten
  EXPECT_EQ(c.judge(3, false), Verdict::StreamClosed);
  c.opened(9);
  c.opened(13);  // the gap {7} is forgotten for {11}
  EXPECT_EQ(c.judge(7, true), Verdict::Ignore);
  EXPECT_EQ(c.judge(11, true), Verdict::ProtocolError);
}

}  // namespace
}  // namespace sluice::h2
