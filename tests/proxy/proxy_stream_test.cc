// ProxyStream: its state machine, a call the whole way through, and each phase (queued,
// connecting, forwarding), teardown from the connection, traffic classes. Harness:
// proxy_stream_harness.h.
#include "tests/proxy/proxy_stream_harness.h"

namespace sluice {
namespace {

using namespace proxy_test;  // NOLINT(google-build-using-namespace): the harness

// ---- The state machine itself ----

TEST(StreamStateTest, AllowsExactlyTheMovesOfTheDiagram) {
  using S = StreamState;
  const std::set<std::pair<S, S>> legal = {
      {S::ReceivingHeaders, S::Filtering},
      {S::ReceivingHeaders, S::Local},
      {S::ReceivingHeaders, S::Closed},
      {S::Filtering, S::Connecting},
      {S::Filtering, S::Local},
      {S::Filtering, S::Closed},
      {S::Connecting, S::Forwarding},
      {S::Connecting, S::Local},
      {S::Connecting, S::Closed},
      {S::Forwarding, S::Responding},
      {S::Forwarding, S::Local},
      {S::Forwarding, S::Connecting},
      {S::Forwarding, S::Closed},
      {S::Responding, S::Local},
      {S::Responding, S::Closed},
      {S::Local, S::Closed},
  };
  for (int f = 0; f < kStreamStateCount; ++f) {
    for (int t = 0; t < kStreamStateCount; ++t) {
      const auto from = static_cast<S>(f);
      const auto to = static_cast<S>(t);
      EXPECT_EQ(is_legal_transition(from, to), legal.count({from, to}) == 1)
          << to_string(from) << " -> " << to_string(to);
    }
  }
}

// ---- The whole way through ----

TEST_F(ProxyStreamTest, UnaryCallGoesThroughEveryPhaseAndIsRelayedUnchanged) {
  start();
  const int32_t id = call("ping");
  const int32_t up = only_upstream_request();
  ProxyStream* s = downstream_.stream(id);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->state(), StreamState::Forwarding);
  EXPECT_EQ(upstream_.link.server_owner.streams.at(up)->received, "ping");
  EXPECT_EQ(upstream_.link.server_owner.streams.at(up)->header(0, ":path"), "/pkg.Svc/Method");
  EXPECT_EQ(cluster().upstream_rq_active.value(), 1);

  respond(up, "pong");
  RecordingStream& c = client_call(id);
  EXPECT_TRUE(c.closed);
  EXPECT_EQ(c.close_code, 0u);
  EXPECT_EQ(c.received, "pong");
  EXPECT_EQ(c.header(0, ":status"), "200");
  EXPECT_EQ(c.header(0, "x-sluice-queue-us"), "0");
  EXPECT_EQ(c.last_header("grpc-status"), "0");
  EXPECT_EQ(ended(EndReason::Completed), 1u);
  EXPECT_EQ(cluster().upstream_rq_total.value(), 1u);
  EXPECT_EQ(cluster().upstream_rq_active.value(), 0);
  EXPECT_EQ(upstream_.link.releases.size(), 1u);  // released exactly once
  EXPECT_EQ(upstream_.link.releases.begin()->second, 1);
  EXPECT_EQ(upstream_.link.cancels, 0);
  EXPECT_EQ(downstream_.finished.size(), 1u);
  EXPECT_FALSE(downstream_.finished[0].second);
}

TEST_F(ProxyStreamTest, StreamIsInRespondingWhileTheBodyFlows) {
  start();
  const int32_t id = call();
  const int32_t up = only_upstream_request();
  respond(up, "part", /*finish=*/false);
  ASSERT_NE(downstream_.stream(id), nullptr);
  EXPECT_EQ(downstream_.stream(id)->state(), StreamState::Responding);
  EXPECT_EQ(client_call(id).received, "part");
  EXPECT_FALSE(client_call(id).closed);
}

TEST_F(ProxyStreamTest, ForwardsTheRemainingDeadlineUpstream) {
  start({fixed_semaphore(1)});
  const int32_t first = call("a", std::string("5S"));
  const int32_t second = call("b", std::string("5S"));  // queued behind the first
  advance(1s);
  respond(only_upstream_request());
  EXPECT_TRUE(client_call(first).closed);
  auto reqs = upstream_requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].second->header(0, "grpc-timeout"), format_grpc_timeout(5s));
  EXPECT_EQ(reqs[1].second->header(0, "grpc-timeout"), format_grpc_timeout(4s));  // 1 s spent
  respond(reqs[1].first);
  EXPECT_EQ(client_call(second).header(0, "x-sluice-queue-us"), "1000000");
}

// ---- Filtering (queued) ----

TEST_F(ProxyStreamTest, QueuedRequestHoldsOneStreamWindowOfBodyUntilAdmitted) {
  start({fixed_semaphore(1)});
  call("first");
  const std::string body(100000, 'x');
  const int32_t id = call(body);
  EXPECT_EQ(downstream_.stream(id)->state(), StreamState::Filtering);
  EXPECT_EQ(upstream_requests().size(), 1u);
  // Read pacing: no credit comes back while the bytes wait in sluice, so the client is held at
  // its first stream window (64 KiB).
  EXPECT_EQ(client_call(id).sent, 65536u);

  respond(upstream_requests()[0].first);  // frees the permit
  auto reqs = upstream_requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].second->received, body);
  EXPECT_EQ(client_call(id).sent, body.size());
}

TEST_F(ProxyStreamTest, ResetAfterTheMinimumLifetimeIsNotPremature) {
  // A well-behaved client cancelling a call that waited in the queue until its deadline.
  listener_config_.limits.premature_reset_min_stream_lifetime = 1s;
  start({fixed_semaphore(1)});
  call();
  const int32_t early = call();
  const int32_t late = call();
  advance(999ms);
  client_reset(early);
  advance(1ms);
  client_reset(late);
  ASSERT_EQ(downstream_.finished.size(), 2u);
  EXPECT_EQ(downstream_.finished[0], std::make_pair(early, true));  // 999 ms: premature
  EXPECT_EQ(downstream_.finished[1], std::make_pair(late, false));  // 1 s: not
}

TEST_F(ProxyStreamTest, ClientCancelWhileQueuedLeavesTheQueue) {
  start({fixed_semaphore(1)});
  const int32_t first = call();
  const int32_t queued = call();
  client_reset(queued);
  EXPECT_EQ(downstream_.stream(queued), nullptr);
  EXPECT_EQ(ended(EndReason::ClientReset), 1u);
  ASSERT_EQ(downstream_.finished.size(), 1u);
  EXPECT_TRUE(downstream_.finished[0].second);  // reset before any response: premature
  respond(only_upstream_request());
  EXPECT_TRUE(client_call(first).closed);
  EXPECT_EQ(upstream_requests().size(), 1u);  // the cancelled one never went upstream
  EXPECT_EQ(upstream_.assignments, 1);
}

TEST_F(ProxyStreamTest, DeadlineWhileQueuedAnswersWithoutReachingTheUpstream) {
  start({fixed_semaphore(1)});
  call();
  const int32_t id = call("x", std::string("100m"));
  advance(100ms);
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.header(0, "grpc-status"), "4");
  EXPECT_EQ(c.header(0, "grpc-message"),
            "deadline exceeded (grpc-timeout 100ms, while waiting for admission)");
  EXPECT_EQ(c.header(0, "x-sluice-queue-us"), "100000");
  EXPECT_EQ(ended(EndReason::DeadlineExceeded), 1u);
  EXPECT_EQ(upstream_requests().size(), 1u);
}

TEST_F(ProxyStreamTest, ShedRequestGetsATrailersOnlyReply) {
  start({queue_wait_budget(10ms), fixed_semaphore(1)});
  call();
  const int32_t id = call();
  advance(10ms);
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  ASSERT_EQ(c.blocks.size(), 1u);  // one HEADERS frame with END_STREAM
  EXPECT_EQ(c.header(0, ":status"), "200");
  EXPECT_EQ(c.header(0, "content-type"), "application/grpc");
  EXPECT_EQ(c.header(0, "grpc-status"), "8");
  EXPECT_EQ(c.header(0, "grpc-message"), "queue wait budget 10ms exceeded");
  EXPECT_EQ(c.header(0, "x-sluice-queue-us"), "10000");
  EXPECT_EQ(ended(EndReason::Shed), 1u);
}

TEST_F(ProxyStreamTest, NonGrpcRequestIsShedWithA503AndRetryAfter) {
  start({queue_wait_budget(10ms), fixed_semaphore(1)});
  call("", std::nullopt, false, "application/grpc");
  const int32_t id = call("", std::nullopt, false, "text/plain");
  advance(10ms);
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.header(0, ":status"), "503");
  EXPECT_EQ(c.header(0, "retry-after"), "1");
  EXPECT_EQ(c.received, "queue wait budget 10ms exceeded\n");
}

// ---- Connecting (admitted, no link ready yet) ----

TEST_F(ProxyStreamTest, AdmittedRequestWaitsForItsLinkThenGoesUpstream) {
  start();
  upstream_.mode = TestUpstreamPort::Mode::Hold;
  const int32_t id = call();
  EXPECT_EQ(downstream_.stream(id)->state(), StreamState::Connecting);
  EXPECT_TRUE(upstream_requests().empty());
  upstream_.make_ready();
  pump();
  EXPECT_EQ(downstream_.stream(id)->state(), StreamState::Forwarding);
  respond(only_upstream_request());
  EXPECT_EQ(client_call(id).last_header("grpc-status"), "0");
}

TEST_F(ProxyStreamTest, ClientCancelWhileConnectingReleasesTheLink) {
  start();
  upstream_.mode = TestUpstreamPort::Mode::Hold;
  const int32_t id = call();
  client_reset(id);
  EXPECT_EQ(downstream_.stream(id), nullptr);
  EXPECT_EQ(upstream_.link.releases.size(), 1u);
  EXPECT_EQ(upstream_.link.cancels, 0);  // nothing was open upstream
  EXPECT_EQ(cluster().upstream_rq_cancelled_total.value(), 0u);
  EXPECT_EQ(ended(EndReason::ClientReset), 1u);
}

TEST_F(ProxyStreamTest, ConnectFailureWhileConnectingAnswersUnavailable) {
  start();
  upstream_.mode = TestUpstreamPort::Mode::Hold;
  const int32_t id = call();
  upstream_.fail_held();
  pump();
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.header(0, "grpc-status"), "14");
  EXPECT_EQ(c.header(0, "grpc-message"), "connect failed: test");
  EXPECT_EQ(ended(EndReason::UpstreamUnavailable), 1u);
}

TEST_F(ProxyStreamTest, NoEndpointAnswersUnavailableAtOnce) {
  start();
  upstream_.mode = TestUpstreamPort::Mode::Unavailable;
  const int32_t id = call();
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.header(0, "grpc-status"), "14");
  EXPECT_EQ(c.header(0, "grpc-message"), "upstream cluster 'app' unavailable: test");
}

TEST_F(ProxyStreamTest, StreamThatCannotBeOpenedUpstreamAnswersUnavailable) {  // bad headers
  start();
  upstream_.link.refuse_submit = true;
  const int32_t id = call();
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.header(0, "grpc-status"), "14");
  EXPECT_EQ(c.header(0, "grpc-message").rfind("cannot open upstream stream: ", 0), 0u);
  EXPECT_EQ(upstream_.link.releases.size(), 1u);
  EXPECT_EQ(cluster().upstream_rq_total.value(), 0u);
}

TEST_F(ProxyStreamTest, DeadlineWhileConnectingAnswersDeadlineExceeded) {
  start();
  upstream_.mode = TestUpstreamPort::Mode::Hold;
  const int32_t id = call("x", std::string("50m"));
  advance(50ms);
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.header(0, "grpc-status"), "4");
  EXPECT_EQ(c.header(0, "grpc-message"), "deadline exceeded (grpc-timeout 50ms)");
  EXPECT_EQ(upstream_.link.releases.size(), 1u);
  EXPECT_TRUE(upstream_.link.pending.empty());
  upstream_.make_ready();  // the connection comes up: the stream is not on it any more
  pump();
  EXPECT_TRUE(upstream_requests().empty());
}

// ---- Forwarding (open upstream, no response yet) ----

TEST_F(ProxyStreamTest, ClientCancelWhileForwardingResetsTheUpstreamStream) {
  start();
  const int32_t id = call();
  const int32_t up = only_upstream_request();
  client_reset(id);
  EXPECT_EQ(upstream_.link.cancels, 1);
  EXPECT_TRUE(upstream_.link.server_owner.streams.at(up)->closed);
  EXPECT_EQ(upstream_.link.server_owner.streams.at(up)->close_code,
            static_cast<uint32_t>(NGHTTP2_CANCEL));
  EXPECT_EQ(cluster().upstream_rq_cancelled_total.value(), 1u);
  EXPECT_EQ(cluster().upstream_rq_active.value(), 0);
  EXPECT_EQ(upstream_.link.releases.begin()->second, 1);
}

TEST_F(ProxyStreamTest, UpstreamLossWhileForwardingAnswersUnavailable) {
  start();
  const int32_t id = call();
  upstream_.lose_connection();
  pump();
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.header(0, "grpc-status"), "14");
  EXPECT_EQ(c.header(0, "grpc-message"),
            "upstream connection lost: test closed the connection before response headers");
  EXPECT_EQ(cluster().upstream_rq_reset_total.value(), 1u);
  EXPECT_EQ(cluster().upstream_rq_active.value(), 0);
  EXPECT_EQ(upstream_.link.cancels, 0);  // a dead link is not touched
  EXPECT_TRUE(upstream_.link.releases.empty());
  EXPECT_EQ(ended(EndReason::UpstreamReset), 1u);
}

TEST_F(ProxyStreamTest, UpstreamResetBeforeHeadersAnswersTheStatusGrpcMapsItsCodeTo) {
  start();
  // PROTOCOL-HTTP2.md, "Errors": what a gRPC client library reports for each reset code.
  const std::vector<std::pair<uint32_t, std::string>> expected = {
      {NGHTTP2_NO_ERROR, "13"},
      {NGHTTP2_PROTOCOL_ERROR, "13"},
      {NGHTTP2_INTERNAL_ERROR, "13"},
      {NGHTTP2_FLOW_CONTROL_ERROR, "13"},
      {NGHTTP2_SETTINGS_TIMEOUT, "13"},
      {NGHTTP2_FRAME_SIZE_ERROR, "13"},
      {NGHTTP2_CANCEL, "1"},
      {NGHTTP2_COMPRESSION_ERROR, "13"},
      {NGHTTP2_CONNECT_ERROR, "13"},
      {NGHTTP2_ENHANCE_YOUR_CALM, "8"},
      {NGHTTP2_INADEQUATE_SECURITY, "7"},
  };
  for (const auto& [code, status] : expected) {
    SCOPED_TRACE(h2_error_name(code));
    const int32_t id = call();
    upstream_reset(upstream_requests().back().first, code);
    RecordingStream& c = client_call(id);
    ASSERT_TRUE(c.closed);
    EXPECT_EQ(c.close_code, 0u);  // an answer (trailers-only), not a reset
    EXPECT_EQ(c.header(0, "grpc-status"), status);
    EXPECT_EQ(c.header(0, "grpc-message"), std::string("upstream reset the stream (") +
                                               h2_error_name(code) + ") before response headers");
  }
  EXPECT_EQ(cluster().upstream_rq_reset_total.value(), expected.size());
  EXPECT_EQ(cluster().upstream_rq_retry_total.value(), 0u);
  EXPECT_EQ(ended(EndReason::UpstreamReset), expected.size());
}

// ---- Teardown from the connection ----

TEST_F(ProxyStreamTest, TerminateBeforeAResponseAnswersWithTheStatus) {
  start();
  const int32_t id = call();
  downstream_.stream(id)->terminate(EndReason::Drained, GrpcStatus::Unavailable,
                                    "sluice is shutting down (drain timeout)");
  pump();
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.header(0, "grpc-status"), "14");
  EXPECT_EQ(c.header(0, "grpc-message"), "sluice is shutting down (drain timeout)");
  EXPECT_EQ(upstream_.link.cancels, 1);
  EXPECT_EQ(ended(EndReason::Drained), 1u);
}

TEST_F(ProxyStreamTest, DownstreamLossInEveryPhaseCountsEachRequestOnce) {
  start({fixed_semaphore(2)});
  upstream_.mode = TestUpstreamPort::Mode::Ready;
  const int32_t forwarding = call();
  const int32_t responding = call();
  const int32_t filtering = call();  // queued: the limit is 2
  respond(upstream_requests()[1].first, "part", /*finish=*/false);
  ASSERT_EQ(downstream_.stream(forwarding)->state(), StreamState::Forwarding);
  ASSERT_EQ(downstream_.stream(responding)->state(), StreamState::Responding);
  ASSERT_EQ(downstream_.stream(filtering)->state(), StreamState::Filtering);
  alive_ = false;
  downstream_.lose_connection();
  pump();
  EXPECT_EQ(ended(EndReason::ClientReset), 3u);
  EXPECT_EQ(upstream_.link.cancels, 2);
  EXPECT_EQ(cluster().upstream_rq_active.value(), 0);
}

TEST_F(ProxyStreamTest, StreamStillReceivingHeadersIsNotARequest) {
  start();
  h2::HeaderBlock h = h2::grpc_request_headers("/pkg.Svc/Method");
  RecordingStream rec;
  client_->submit_request(h, false, &rec);
  // Hand the server only the first bytes of the HEADERS frame (plus everything before it).
  h2::OutputQueue q;
  ASSERT_TRUE(client_->send(q, 1 << 20));
  std::string bytes;
  q.for_each_front(1 << 20, [&](const uint8_t* p, std::size_t n) {
    bytes.append(reinterpret_cast<const char*>(p), n);
  });
  ASSERT_GT(bytes.size(), 20u);
  ASSERT_TRUE(downstream_.session().receive(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            bytes.size() - 5));
  ASSERT_EQ(downstream_.streams.size(), 1u);
  ProxyStream* s = downstream_.streams.begin()->second.get();
  EXPECT_EQ(s->state(), StreamState::ReceivingHeaders);
  EXPECT_TRUE(s->headers_pending_since().has_value());
  alive_ = false;
  downstream_.lose_connection();
  EXPECT_EQ(listener_->stats.downstream_rq_total.value(), 0u);
  EXPECT_EQ(ended(EndReason::ClientReset), 0u);
}

TEST_F(ProxyStreamTest, OversizedRequestHeadersAreAnsweredLocallyAndCounted) {
  listener_config_.http2.max_headers_count = 8;
  start();
  h2::HeaderBlock h = h2::grpc_request_headers("/pkg.Svc/Method");
  for (int i = 0; i < 10; ++i) h.add("x-extra-" + std::to_string(i), "v");
  auto rec = std::make_unique<RecordingStream>();
  rec->body.finish();
  const int32_t id = client_->submit_request(h, false, rec.get());
  calls_[id] = std::move(rec);
  pump();
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.header(0, "grpc-status"), "8");
  EXPECT_EQ(c.header(0, "grpc-message"),
            "request header list too large (limit 61440 bytes, 8 fields)");
  EXPECT_EQ(listener_->stats.downstream_rq_headers_too_large_total.value(), 1u);
  EXPECT_EQ(ended(EndReason::Internal), 1u);
  EXPECT_TRUE(upstream_requests().empty());
}

TEST_F(ProxyStreamTest, OversizedRequestTrailersResetTheStreamInsteadOfBeingCutShort) {
  listener_config_.http2.max_headers_count = 7;
  start();
  auto rec = std::make_unique<RecordingStream>();
  h2::fill(rec->body, "hello");
  // Seven request headers and seven fields allowed: only the trailers are over the limit.
  const int32_t id =
      client_->submit_request(h2::grpc_request_headers("/pkg.Svc/Method"), true, rec.get());
  RecordingStream& c = *rec;
  calls_[id] = std::move(rec);
  pump();
  ASSERT_EQ(upstream_requests().size(), 1u);  // forwarded: headers and body
  h2::HeaderBlock t;
  for (int i = 0; i < 8; ++i) t.add("x-trailer-" + std::to_string(i), "v");
  c.body.set_trailers(std::move(t));
  c.body.finish();
  client_->resume_data(id);
  pump();
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.close_code, static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  EXPECT_EQ(listener_->stats.downstream_rq_headers_too_large_total.value(), 1u);
  EXPECT_EQ(ended(EndReason::Internal), 1u);
  // The upstream never got a cut-down trailer block: its stream was reset.
  const auto reqs = upstream_requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_TRUE(reqs[0].second->closed);
  EXPECT_NE(reqs[0].second->close_code, 0u);
  EXPECT_EQ(reqs[0].second->blocks.size(), 1u);
}

// RFC 9110 9.3.2: a HEAD response is its headers. An upstream that sends content anyway gets
// its stream reset by nghttp2; the client must still get the headers, with END_STREAM.
TEST_F(ProxyStreamTest, HeadGetsTheUpstreamHeadersWithEndStreamEvenIfTheUpstreamSendsContent) {
  start();
  h2::HeaderBlock h;
  h.add(":method", "HEAD");
  h.add(":scheme", "http");
  h.add(":authority", "test");
  h.add(":path", "/");
  auto rec = std::make_unique<RecordingStream>();
  const int32_t id = client_->submit_request(h, false, rec.get());
  calls_[id] = std::move(rec);
  pump();
  respond(only_upstream_request(), "content a HEAD response must not have");
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.close_code, 0u);
  ASSERT_EQ(c.blocks.size(), 1u);
  EXPECT_EQ(c.header(0, ":status"), "200");
  EXPECT_EQ(c.received, "");
  EXPECT_EQ(ended(EndReason::Completed), 1u);
}

TEST_F(ProxyStreamTest, HeadAnsweredLocallyGetsHeadersOnly) {
  start();
  upstream_.mode = TestUpstreamPort::Mode::Hold;
  h2::HeaderBlock h;
  h.add(":method", "HEAD");
  h.add(":scheme", "http");
  h.add(":authority", "test");
  h.add(":path", "/");
  auto rec = std::make_unique<RecordingStream>();
  const int32_t id = client_->submit_request(h, false, rec.get());
  calls_[id] = std::move(rec);
  pump();
  upstream_.fail_held();
  pump();
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.close_code, 0u);
  EXPECT_EQ(c.header(0, ":status"), "503");
  EXPECT_EQ(c.received, "");
}

TEST_F(ProxyStreamTest, TrailersWithinTheLimitsAreForwarded) {
  listener_config_.http2.max_headers_count = 8;
  start();
  auto rec = std::make_unique<RecordingStream>();
  h2::fill(rec->body, "hello");
  h2::HeaderBlock t;
  for (int i = 0; i < 8; ++i) t.add("x-trailer-" + std::to_string(i), "v");
  rec->body.set_trailers(std::move(t));
  rec->body.finish();
  const int32_t id =
      client_->submit_request(h2::grpc_request_headers("/pkg.Svc/Method"), true, rec.get());
  calls_[id] = std::move(rec);
  pump();
  const auto reqs = upstream_requests();
  ASSERT_EQ(reqs.size(), 1u);
  ASSERT_EQ(reqs[0].second->blocks.size(), 2u);
  EXPECT_EQ(reqs[0].second->blocks[1].second.size(), 8u);
  EXPECT_EQ(listener_->stats.downstream_rq_headers_too_large_total.value(), 0u);
}

// ---- Traffic classes and the answer's start ----

TEST_F(ProxyStreamTest, CriticalityComesFromAValidHeaderThenMethodRulesThenTheDefault) {
  CriticalityConfig classes;
  classes.default_class = Criticality::SheddablePlus;
  classes.methods = {CriticalityRule{"/pkg.Reports/*", Criticality::Sheddable},
                     CriticalityRule{"/pkg.Svc/Pay", Criticality::CriticalPlus}};
  listener_config_.criticality = classes;
  start({recorder()});
  call("x", std::nullopt, false, "application/grpc", "/pkg.Reports/Daily");
  call("x", std::nullopt, false, "application/grpc", "/pkg.Svc/Pay");
  call("x", std::nullopt, false, "application/grpc", "/pkg.Svc/Other");
  call("x", std::nullopt, false, "application/grpc", "/pkg.Reports/Daily", "critical");
  call("x", std::nullopt, false, "application/grpc", "/pkg.Svc/Pay", "bogus");
  EXPECT_EQ(g_recorded.classes,
            (std::vector<Criticality>{Criticality::Sheddable, Criticality::CriticalPlus,
                                      Criticality::SheddablePlus, Criticality::Critical,
                                      Criticality::CriticalPlus}));
  EXPECT_EQ(listener_->stats.downstream_rq_criticality_invalid_total.value(), 1u);
  // The class goes upstream unchanged: the header is forwarded as the client sent it.
  EXPECT_EQ(upstream_requests()[3].second->header(0, "x-sluice-criticality"), "critical");
}

TEST_F(ProxyStreamTest, WithoutCriticalityRulesEveryRequestIsCriticalAndTheHeaderIsNotRead) {
  start({recorder()});
  call("x", std::nullopt, false, "application/grpc", "/pkg.Svc/Method", "sheddable");
  EXPECT_EQ(g_recorded.classes, std::vector<Criticality>{Criticality::Critical});
  EXPECT_EQ(listener_->stats.downstream_rq_criticality_invalid_total.value(), 0u);
}

TEST_F(ProxyStreamTest, TheAnswerBeginsAtTheFirstMessageNotAtTheHeaders) {
  start({recorder()});
  const int32_t id = call();
  const int32_t up = only_upstream_request();
  // The upstream sends its headers at once and its first message 30 ms later (a stream).
  RecordingStream& s = *upstream_.link.server_owner.streams.at(up);
  h2::HeaderBlock h;
  h.add(":status", "200");
  h.add("content-type", "application/grpc");
  upstream_.link.server->submit_response(up, h, true);
  pump();
  EXPECT_TRUE(g_recorded.responses.empty());
  advance(30ms);
  h2::fill(s.body, "msg");
  s.serve = true;
  upstream_.link.server->resume_data(up);
  pump();
  ASSERT_EQ(g_recorded.responses.size(), 1u);
  EXPECT_EQ(g_recorded.responses[0].rtt, Duration(30ms));
  EXPECT_TRUE(g_recorded.responses[0].ok);
  h2::HeaderBlock t;
  t.add("grpc-status", "0");
  s.body.set_trailers(std::move(t));
  upstream_.link.server->resume_data(up);
  pump();
  EXPECT_TRUE(client_call(id).closed);
  EXPECT_EQ(g_recorded.responses.size(), 1u);  // once
}

TEST_F(ProxyStreamTest, TrailersOnlyErrorIsAnAnswerThatIsNotOk) {
  start({recorder()});
  call();
  const int32_t up = only_upstream_request();
  h2::HeaderBlock h;
  h.add(":status", "200");
  h.add("content-type", "application/grpc");
  h.add("grpc-status", "3");
  upstream_.link.server->submit_response(up, h, false);
  pump();
  ASSERT_EQ(g_recorded.responses.size(), 1u);
  EXPECT_FALSE(g_recorded.responses[0].ok);
  EXPECT_EQ(g_recorded.responses[0].grpc_status, 3);
}

TEST_F(ProxyStreamTest, RequestShedWhileQueuedIsAbandonedBeforeItsStreamCloses) {
  start({recorder(), queue_wait_budget(10ms), fixed_semaphore(1)});
  call();
  call();  // queued behind the first
  advance(10ms);
  // The filters hear at once that it will not be admitted (its permit-gate place is given up),
  // and the end of the stream after that.
  const std::vector<std::string> second(g_recorded.events.begin() + 1, g_recorded.events.end());
  EXPECT_EQ(second, (std::vector<std::string>{"request", "abandoned", "complete"}));
}

}  // namespace
}  // namespace sluice
