// ProxyStream while the response flows: cancel, upstream loss, resets, deadlines. Harness:
// proxy_stream_harness.h.
#include "tests/proxy/proxy_stream_harness.h"

namespace sluice {
namespace {

using namespace proxy_test;  // NOLINT(google-build-using-namespace): the harness

// ---- Responding ----

TEST_F(ProxyStreamTest, ClientCancelWhileRespondingResetsUpstream) {
  start();
  const int32_t id = call();
  const int32_t up = only_upstream_request();
  respond(up, "part", /*finish=*/false);
  client_reset(id);
  EXPECT_EQ(upstream_.link.cancels, 1);
  EXPECT_EQ(upstream_.link.server_owner.streams.at(up)->close_code,
            static_cast<uint32_t>(NGHTTP2_CANCEL));
  ASSERT_EQ(downstream_.finished.size(), 1u);
  EXPECT_FALSE(downstream_.finished[0].second);  // a response had started: not premature
}

TEST_F(ProxyStreamTest, UpstreamLossWhileRespondingResetsTheClient) {
  start();
  const int32_t id = call();
  respond(only_upstream_request(), "part", /*finish=*/false);
  upstream_.lose_connection();
  pump();
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.close_code, static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR));
  EXPECT_EQ(c.received, "part");
  EXPECT_EQ(ended(EndReason::UpstreamReset), 1u);
}

TEST_F(ProxyStreamTest, UpstreamResetWhileRespondingPassesTheCodeOn) {
  start();
  const int32_t id = call();
  const int32_t up = only_upstream_request();
  respond(up, "part", /*finish=*/false);
  upstream_reset(up, NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_EQ(client_call(id).close_code, static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

TEST_F(ProxyStreamTest, DeadlineWhileRespondingResetsBothSides) {
  start();
  const int32_t id = call("x", std::string("300m"));
  const int32_t up = only_upstream_request();
  respond(up, "part", /*finish=*/false);
  advance(300ms);
  EXPECT_EQ(client_call(id).close_code, static_cast<uint32_t>(NGHTTP2_CANCEL));
  EXPECT_EQ(upstream_.link.server_owner.streams.at(up)->close_code,
            static_cast<uint32_t>(NGHTTP2_CANCEL));
  EXPECT_EQ(ended(EndReason::DeadlineExceeded), 1u);
}

}  // namespace
}  // namespace sluice
