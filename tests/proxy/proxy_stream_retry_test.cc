// ProxyStream: transparent retry of requests the upstream provably never processed, and
// max_stream_duration. Harness: proxy_stream_harness.h.
#include "tests/proxy/proxy_stream_harness.h"

namespace sluice {
namespace {

using namespace proxy_test;  // NOLINT(google-build-using-namespace): the harness

// ---- Transparent retry: requests the upstream provably never processed ----

TEST_F(ProxyStreamTest, RefusedStreamIsSentAgainWithTheSameHeadersAndBody) {
  start();
  const std::string body(5000, 'b');  // beyond inline storage: chunks are copied for the retry
  const int32_t id = call(body);
  const int32_t first = only_upstream_request();
  upstream_.use_second = true;
  upstream_reset(first, NGHTTP2_REFUSED_STREAM);
  EXPECT_EQ(upstream_.reassignments, 1);
  ASSERT_EQ(upstream_.second.server_owner.streams.size(), 1u);
  RecordingStream& again = *upstream_.second.server_owner.streams.begin()->second;
  EXPECT_EQ(again.received, body);
  EXPECT_EQ(again.header(0, ":path"), "/pkg.Svc/Method");
  EXPECT_TRUE(again.ended);
  // The upstream answers the second attempt; the client sees one ordinary call.
  h2::HeaderBlock h;
  h.add(":status", "200");
  h.add("content-type", "application/grpc");
  h2::fill(again.body, "world");
  h2::HeaderBlock t;
  t.add("grpc-status", "0");
  again.body.set_trailers(std::move(t));
  again.serve = true;
  upstream_.second.server->submit_response(upstream_.second.server_owner.streams.begin()->first, h,
                                           true);
  pump();
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.close_code, 0u);
  EXPECT_EQ(c.received, "world");
  EXPECT_EQ(c.last_header("grpc-status"), "0");
  EXPECT_EQ(cluster().upstream_rq_retry_total.value(), 1u);
  EXPECT_EQ(cluster().upstream_rq_total.value(), 2u);
  EXPECT_EQ(cluster().upstream_rq_active.value(), 0);
  EXPECT_EQ(ended(EndReason::Completed), 1u);
}

TEST_F(ProxyStreamTest, StreamRefusedThreeTimesIsRefusedToTheClientNotAnsweredUnavailable) {
  start();
  const int32_t id = call();
  for (int attempt = 0; attempt < 3; ++attempt) {
    upstream_reset(upstream_requests().back().first, NGHTTP2_REFUSED_STREAM);
  }
  EXPECT_EQ(upstream_requests().size(), 3u);  // sent, and sent again twice
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_TRUE(c.blocks.empty());  // no trailers-only UNAVAILABLE: the client's library retries
  EXPECT_EQ(c.close_code, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_EQ(cluster().upstream_rq_retry_total.value(), 2u);
  EXPECT_EQ(cluster().upstream_rq_retry_refused_total.value(), 1u);
  EXPECT_EQ(ended(EndReason::UpstreamUnavailable), 1u);
  ASSERT_EQ(downstream_.finished.size(), 1u);
  EXPECT_FALSE(downstream_.finished[0].second);  // our reset is not the client's premature one
}

TEST_F(ProxyStreamTest, RequestThatSentMoreThanAStreamWindowIsNotSentAgain) {
  start();
  const int32_t id = call(std::string(100 * 1024, 'x'));  // the listener's window is 64 KiB
  const int32_t up = only_upstream_request();
  ASSERT_EQ(upstream_.link.server_owner.streams.at(up)->received.size(), 100u * 1024);
  upstream_reset(up, NGHTTP2_REFUSED_STREAM);
  EXPECT_EQ(upstream_requests().size(), 1u);
  EXPECT_EQ(client_call(id).close_code, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_EQ(cluster().upstream_rq_retry_total.value(), 0u);
  EXPECT_EQ(cluster().upstream_rq_retry_refused_total.value(), 1u);
}

TEST_F(ProxyStreamTest, StreamAboveTheLastStreamIdOfAGoawayGoesToAnotherConnection) {
  start();
  const int32_t id = call();
  upstream_.use_second = true;
  // The upstream says it processed no stream (last id 0): stream 1 is closed REFUSED_STREAM.
  ASSERT_EQ(nghttp2_submit_goaway(upstream_.link.server->raw(), NGHTTP2_FLAG_NONE, 0,
                                  NGHTTP2_NO_ERROR, nullptr, 0),
            0);
  pump();
  EXPECT_EQ(upstream_.link.client_owner.goaway_last, 0);
  ASSERT_EQ(upstream_.second.server_owner.streams.size(), 1u);
  EXPECT_EQ(upstream_.second.server_owner.streams.begin()->second->received, "hello");
  EXPECT_FALSE(client_call(id).closed);
  EXPECT_EQ(cluster().upstream_rq_retry_total.value(), 1u);
}

TEST_F(ProxyStreamTest, StreamWhoseConnectionDiedBeforeItWasSentGoesToAnotherConnection) {
  start();
  upstream_.link.paused = true;  // submitted, never written
  const int32_t id = call();
  upstream_.use_second = true;
  upstream_.lose_connection();
  pump();
  ASSERT_EQ(upstream_.second.server_owner.streams.size(), 1u);
  EXPECT_FALSE(client_call(id).closed);
  EXPECT_EQ(cluster().upstream_rq_retry_total.value(), 1u);
  EXPECT_EQ(cluster().upstream_rq_reset_total.value(), 0u);
}

TEST_F(ProxyStreamTest, StreamIdsRunningOutSendsTheRequestOnAnotherConnection) {
  start();
  upstream_.link.refuse_submit = true;
  upstream_.link.submit_error = NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE;
  upstream_.use_second = true;
  const int32_t id = call();
  EXPECT_EQ(upstream_.reassignments, 1);
  ASSERT_EQ(upstream_.second.server_owner.streams.size(), 1u);
  EXPECT_FALSE(client_call(id).closed);
  EXPECT_EQ(upstream_.link.releases.size(), 1u);  // the first connection was let go
}

TEST_F(ProxyStreamTest, RetryThatFindsNoEndpointIsRefusedToTheClient) {
  start();
  const int32_t id = call();
  upstream_.mode = TestUpstreamPort::Mode::Unavailable;
  upstream_reset(only_upstream_request(), NGHTTP2_REFUSED_STREAM);
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_TRUE(c.blocks.empty());
  EXPECT_EQ(c.close_code, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
}

TEST_F(ProxyStreamTest, RefusedAfterResponseHeadersIsNotSentAgain) {
  start();
  const int32_t id = call();
  const int32_t up = only_upstream_request();
  respond(up, "part", /*finish=*/false);
  upstream_reset(up, NGHTTP2_REFUSED_STREAM);
  EXPECT_EQ(upstream_requests().size(), 1u);
  EXPECT_EQ(client_call(id).close_code, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_EQ(client_call(id).received, "part");
  EXPECT_EQ(cluster().upstream_rq_retry_total.value(), 0u);
}

// ---- max_stream_duration (calls without grpc-timeout) ----

TEST_F(ProxyStreamTest, MaxStreamDurationEndsACallWithoutDeadlineWithDeadlineExceeded) {
  upstream_.max_duration = 500ms;
  start();
  const int32_t id = call();
  const int32_t up = only_upstream_request();
  advance(499ms);
  EXPECT_FALSE(client_call(id).closed);
  advance(1ms);
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.header(0, "grpc-status"), "4");
  EXPECT_EQ(c.header(0, "grpc-message"),
            "max_stream_duration (500ms) exceeded; the call carried no grpc-timeout");
  EXPECT_EQ(upstream_.link.server_owner.streams.at(up)->close_code,
            static_cast<uint32_t>(NGHTTP2_CANCEL));
  EXPECT_EQ(cluster().upstream_rq_max_duration_reached_total.value(), 1u);
  EXPECT_EQ(ended(EndReason::DeadlineExceeded), 1u);
}

TEST_F(ProxyStreamTest, MaxStreamDurationLeavesCallsWithTheirOwnDeadlineAndFinishedCalls) {
  upstream_.max_duration = 500ms;
  start();
  const int32_t with_deadline = call("x", std::string("2S"));
  const int32_t done = call();
  respond(upstream_requests().back().first);
  ASSERT_TRUE(client_call(done).closed);
  advance(1s);
  EXPECT_FALSE(client_call(with_deadline).closed);
  EXPECT_EQ(cluster().upstream_rq_max_duration_reached_total.value(), 0u);
  advance(1s);
  EXPECT_EQ(client_call(with_deadline).header(0, "grpc-status"), "4");
}

TEST_F(ProxyStreamTest, DeadlineWhileForwardingCancelsUpstreamAndAnswersTheClient) {
  start();
  const int32_t id = call("x", std::string("200m"));
  const int32_t up = only_upstream_request();
  advance(200ms);
  EXPECT_EQ(upstream_.link.server_owner.streams.at(up)->close_code,
            static_cast<uint32_t>(NGHTTP2_CANCEL));
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.header(0, "grpc-status"), "4");
  EXPECT_EQ(ended(EndReason::DeadlineExceeded), 1u);
}

}  // namespace
}  // namespace sluice
