// QueueFrontend against a real redis-server, driven the way a ProxyStream drives an upstream
// port: assign, submit headers, hand it the body, read back the response events. The consumer's
// side is played by the test with RedisStreams on its own connection.
#include "src/queue/queue_frontend.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "src/h2/body_buffer.h"
#include "src/h2/stream_events.h"
#include "src/proxy/cluster_stats.h"
#include "tests/fakes/fake_clock.h"
#include "tests/queue/io_wait.h"
#include "tests/queue/redis_server.h"

namespace sluice::queue {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

std::string grpc_message(std::string_view payload) {
  std::string out(5, '\0');
  const auto n = static_cast<uint32_t>(payload.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  return out + std::string(payload);
}

// One stream as ProxyStream would be: it submits when the link is ready and records the
// response the link plays to it.
class FakeStream final : public UpstreamClient, public h2::StreamEvents {
 public:
  explicit FakeStream(std::vector<std::pair<std::string, std::string>> headers)
      : headers_(std::move(headers)) {}

  // UpstreamClient
  void on_upstream_assigned(UpstreamLink& link) override { link_ = &link; }
  void on_upstream_ready() override {
    std::vector<nghttp2_nv> nv;
    for (const auto& [n, v] : headers_) nv.push_back(h2::HeaderBlock::make_nv(n, v));
    id_ = link_->submit(nv, with_body_, this);
  }
  void on_upstream_unavailable(std::string_view message) override {
    unavailable_ = std::string(message);
    link_ = nullptr;
  }
  void on_upstream_connection_lost(std::string_view message) override {
    lost_ = std::string(message);
  }
  h2::StreamEvents* upstream_events() override { return this; }

  // h2::StreamEvents
  void on_headers_begin(bool initial) override {
    events_.push_back(initial ? "headers" : "trailers");
    in_trailers_ = !initial;
  }
  uint32_t on_header(std::string_view name, std::string_view value, bool) override {
    (in_trailers_ ? trailers_ : headers_in_).emplace_back(name, value);
    return 0;
  }
  void on_headers_end(bool end_stream) override {
    if (end_stream) events_.push_back("end");
  }
  void on_data(const uint8_t* data, std::size_t length) override {
    body_in_.append(reinterpret_cast<const char*>(data), length);
    events_.push_back("data");
  }
  void on_data_end() override { events_.push_back("end"); }
  void on_close(uint32_t error_code) override {
    closed_ = error_code;
    if (link_ != nullptr) link_->release(*this);
    link_ = nullptr;
  }
  h2::BodyBuffer* outgoing() override { return &request_; }
  void on_outgoing_sent(std::size_t n) override { credited_ += n; }

  void send(std::string_view bytes, bool end) {
    request_.append(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    if (end) request_.finish();
    if (link_ != nullptr && id_ > 0) link_->resume_request(id_);
  }
  void cancel() {
    if (link_ == nullptr) return;
    link_->cancel(id_);
    link_->release(*this);
    link_ = nullptr;
  }

  std::optional<std::string> header(const std::string& name, bool trailer = false) const {
    for (const auto& [n, v] : trailer ? trailers_ : headers_in_) {
      if (n == name) return v;
    }
    return std::nullopt;
  }

  std::vector<std::pair<std::string, std::string>> headers_;
  bool with_body_ = true;
  UpstreamLink* link_ = nullptr;
  int32_t id_ = -1;
  h2::BodyBuffer request_;
  std::size_t credited_ = 0;
  std::optional<std::string> unavailable_;
  std::optional<std::string> lost_;
  std::optional<uint32_t> closed_;
  std::vector<std::string> events_;
  bool in_trailers_ = false;
  Metadata headers_in_;
  Metadata trailers_;
  std::string body_in_;
};

const std::vector<std::pair<std::string, std::string>> kCall = {
    {":method", "POST"},
    {":scheme", "http"},
    {":path", "/pkg.Svc/Get"},
    {":authority", "svc"},
    {"content-type", "application/grpc"},
    {"te", "trailers"},
    {"grpc-timeout", "5S"},
    {"x-user", "alice"},
    {"x-trace-bin", std::string("\0\x01\xff", 3)},
};

class QueueFrontendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    queue_.name = "work";
    queue_.redis = {"127.0.0.1", server_.port()};
    queue_.stream = "sluice:work";
    queue_.group = "g";
    RedisConnection::Options o;
    o.port = server_.port();
    consumer_conn_ = RedisConnection::create(io_, o);
    consumer_conn_->start();
    ASSERT_TRUE(run_until(io_, [&] { return consumer_conn_->connected(); }));
    consumer_.emplace(consumer_conn_);
  }
  void TearDown() override {
    frontend_.reset();
    run_for(io_, 10ms);
  }

  void start_frontend(const Clock& clock = RealClock::instance()) {
    frontend_ = std::make_unique<QueueFrontend>(io_, queue_, "host:1:abc", 0, cluster_stats_,
                                                stats_, clock);
    frontend_->start();
    ASSERT_TRUE(run_until(io_, [&] { return frontend_->connected(); }));
    run_for(io_, 30ms);  // group created, first BLPOP issued
  }

  // What a consumer does: read one entry of the group.
  std::optional<StreamEntry> read_entry() {
    std::optional<StreamEntry> entry;
    bool done = false;
    RedisStreams::ReadGroupArgs a;
    a.stream = queue_.stream;
    a.group = queue_.group;
    a.consumer = "pod-1";
    a.count = 1;
    consumer_->xreadgroup(a, [&](RedisResult<std::vector<StreamEntry>> r) {
      // NOGROUP: the frontend's XGROUP CREATE, sent on its own connection, has not run yet (a
      // loaded machine can delay it past this read): nothing to read so far.
      if (!r && r.error().to_string().find("NOGROUP") == std::string::npos) {
        ADD_FAILURE() << r.error().to_string();
      }
      if (r && !r->empty()) entry = r->front();
      done = true;
    });
    EXPECT_TRUE(run_until(io_, [&] { return done; }));
    return entry;
  }
  std::optional<StreamEntry> wait_entry() {
    std::optional<StreamEntry> entry;
    run_until(io_, [&] {
      entry = read_entry();
      return entry.has_value();
    });
    return entry;
  }
  // The entry a call became, decoded; nullopt (and a test failure) if none came or it does not
  // decode.
  std::optional<QueueEnvelope> wait_envelope() {
    const auto entry = wait_entry();
    if (!entry) {
      ADD_FAILURE() << "no stream entry";
      return std::nullopt;
    }
    auto envelope = QueueEnvelope::decode(entry->fields);
    if (!envelope.ok()) {
      ADD_FAILURE() << envelope.error().message;
      return std::nullopt;
    }
    return std::move(envelope).value();
  }
  void add_entries(int n) {
    for (int i = 0; i < n; ++i) {
      bool done = false;
      consumer_->xadd(queue_.stream, {{"v", "1"}}, std::nullopt, [&](auto) { done = true; });
      ASSERT_TRUE(run_until(io_, [&] { return done; }));
    }
  }
  // Reads `n` entries as consumer "pod-1" would (delivered, so the group's entries-read grows).
  void take_entries(uint64_t n) {
    bool done = false;
    RedisStreams::ReadGroupArgs a;
    a.stream = queue_.stream;
    a.group = queue_.group;
    a.consumer = "pod-1";
    a.count = n;
    consumer_->xreadgroup(a, [&](auto r) {
      EXPECT_TRUE(r.ok() && r->size() == n);
      done = true;
    });
    ASSERT_TRUE(run_until(io_, [&] { return done; }));
  }
  int64_t entries_added() {
    const RespValue info = server_.command({"XINFO", "STREAM", queue_.stream});
    for (std::size_t i = 0; i + 1 < info.elements().size(); i += 2) {
      if (info.elements()[i].str() == "entries-added") return info.elements()[i + 1].integer();
    }
    ADD_FAILURE() << "no entries-added in XINFO STREAM";
    return -1;
  }
  void push_reply(const std::string& key, const QueueReply& reply) {
    bool done = false;
    consumer_->push_reply(key, reply.encode(), 60s, [&](RedisResult<int64_t> r) {
      EXPECT_TRUE(r.ok());
      done = true;
    });
    ASSERT_TRUE(run_until(io_, [&] { return done; }));
  }

  RedisServer server_;
  asio::io_context io_{1};
  StatsRegistry registry_;
  ClusterStats cluster_stats_{registry_, "queue:work"};
  QueueStats stats_{registry_, "work"};
  QueueConfig queue_;
  std::unique_ptr<QueueFrontend> frontend_;
  std::shared_ptr<RedisConnection> consumer_conn_;
  std::optional<RedisStreams> consumer_;
};

TEST_F(QueueFrontendTest, EnqueuesTheCallAndPlaysTheReplyUnchanged) {
  start_frontend();
  FakeStream s(kCall);
  frontend_->assign(s);
  ASSERT_NE(s.link_, nullptr);
  ASSERT_GT(s.id_, 0);
  const std::string request = grpc_message("hello");
  s.send(request, true);
  const auto envelope = wait_envelope();
  ASSERT_TRUE(envelope.has_value());
  EXPECT_EQ(envelope->method, "/pkg.Svc/Get");
  EXPECT_EQ(envelope->body, request);
  EXPECT_EQ(envelope->reply_to, frontend_->reply_key());
  EXPECT_EQ(envelope->reply_to, "sluice:work:reply:host:1:abc:0");
  EXPECT_EQ(envelope->frontend, "host:1:abc");
  EXPECT_EQ(envelope->attempt, 1u);
  // The absolute deadline replaces grpc-timeout; every other field travels byte-exact.
  const int64_t left = envelope->deadline_unix_ms - unix_ms_now();
  EXPECT_GT(left, 4000);
  EXPECT_LE(left, 5000);
  Metadata expected;
  for (const auto& [n, v] : kCall) {
    if (n != "grpc-timeout") expected.emplace_back(n, v);
  }
  EXPECT_EQ(envelope->metadata, expected);
  EXPECT_EQ(s.credited_, request.size());  // the client's window came back
  // Worker 0 publishes the group's state: one entry delivered to one consumer.
  EXPECT_TRUE(run_until(io_, [&] {
    return stats_.pending.value() == 1 && stats_.consumers.value() == 1 &&
           stats_.backlog.value() == 0 && stats_.stream_length.value() == 1;
  }));
  EXPECT_TRUE(frontend_->request_sent(s.id_));

  QueueReply reply;
  reply.call_id = envelope->call_id;
  reply.consumer = "pod-1";
  reply.headers = {{":status", "200"}, {"content-type", "application/grpc"}, {"x-srv", "1"}};
  reply.body = grpc_message("world");
  reply.trailers = {{"grpc-status", "0"}, {"x-trailer", "t"}};
  push_reply(envelope->reply_to, reply);
  ASSERT_TRUE(run_until(io_, [&] { return s.closed_.has_value(); }));
  EXPECT_EQ(*s.closed_, 0u);
  EXPECT_EQ(s.events_, (std::vector<std::string>{"headers", "data", "trailers", "end"}));
  EXPECT_EQ(s.headers_in_, reply.headers);
  EXPECT_EQ(s.body_in_, reply.body);
  EXPECT_EQ(s.trailers_, reply.trailers);
  EXPECT_EQ(frontend_->open_calls(), 0u);
  EXPECT_EQ(stats_.frontend_rq_ok_total.value(), 1u);
  EXPECT_EQ(stats_.frontend_rq_open.value(), 0);
}

TEST_F(QueueFrontendTest, AConsumersLocalReplyIsTrailersOnly) {
  start_frontend();
  FakeStream s(kCall);
  frontend_->assign(s);
  s.send(grpc_message("x"), true);
  const auto envelope = wait_envelope();
  ASSERT_TRUE(envelope.has_value());
  QueueReply reply;
  reply.call_id = envelope->call_id;
  reply.grpc_status = 4;
  reply.grpc_message = "deadline passed in the queue";
  push_reply(envelope->reply_to, reply);
  ASSERT_TRUE(run_until(io_, [&] { return s.closed_.has_value(); }));
  EXPECT_EQ(s.events_, (std::vector<std::string>{"headers", "end"}));
  EXPECT_EQ(s.header("grpc-status"), "4");
  EXPECT_EQ(s.header("grpc-message"), "deadline passed in the queue");
  EXPECT_EQ(s.header(":status"), "200");
}

TEST_F(QueueFrontendTest, RedisUnreachableIsUnavailableAtOnce) {
  queue_.redis.port = 1;  // nothing listens there
  frontend_ = std::make_unique<QueueFrontend>(io_, queue_, "f", 0, cluster_stats_, stats_);
  frontend_->start();
  run_for(io_, 20ms);
  FakeStream s(kCall);
  frontend_->assign(s);
  ASSERT_TRUE(s.unavailable_.has_value());
  EXPECT_NE(s.unavailable_->find("queue 'work': Redis 127.0.0.1:1 unreachable"), std::string::npos)
      << *s.unavailable_;
  EXPECT_EQ(stats_.frontend_rq_enqueue_failed_total.value(), 1u);
}

TEST_F(QueueFrontendTest, ASecondRequestMessageIsUnimplementedAndNothingIsEnqueued) {
  start_frontend();
  FakeStream s(kCall);
  frontend_->assign(s);
  s.send(grpc_message("one") + grpc_message("two"), false);
  ASSERT_TRUE(run_until(io_, [&] { return s.closed_.has_value(); }));
  EXPECT_EQ(s.header("grpc-status"), "12");
  EXPECT_NE(s.header("grpc-message")->find("unary calls only"), std::string::npos);
  EXPECT_FALSE(read_entry().has_value());
  EXPECT_EQ(stats_.frontend_rq_unimplemented_total.value(), 1u);
}

TEST_F(QueueFrontendTest, ABacklogAboveMaxPendingIsRefusedBeforeXadd) {
  queue_.max_pending = 2;
  start_frontend();
  for (int i = 0; i < 2; ++i) {
    bool done = false;
    consumer_->xadd(queue_.stream, {{"v", "1"}}, std::nullopt, [&](auto) { done = true; });
    ASSERT_TRUE(run_until(io_, [&] { return done; }));
  }
  ASSERT_TRUE(run_until(io_, [&] { return frontend_->backlog() == 2; }));
  EXPECT_EQ(stats_.backlog.value(), 2);
  FakeStream s(kCall);
  frontend_->assign(s);
  s.send(grpc_message("x"), true);
  ASSERT_TRUE(run_until(io_, [&] { return s.closed_.has_value(); }));
  EXPECT_EQ(s.header("grpc-status"), "8");
  EXPECT_EQ(s.header("grpc-retry-pushback-ms"), "250");
  EXPECT_NE(s.header("grpc-message")->find("backlog 2 >= max_pending 2"), std::string::npos);
  EXPECT_EQ(stats_.frontend_rq_backpressure_total.value(), 1u);
  EXPECT_EQ(server_.command({"XLEN", queue_.stream}).integer(), 2);
}

// The call of kCall with another grpc-timeout (empty: none).
std::vector<std::pair<std::string, std::string>> call_with_timeout(const std::string& timeout) {
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& h : kCall) {
    if (h.first != "grpc-timeout") headers.push_back(h);
  }
  if (!timeout.empty()) headers.emplace_back("grpc-timeout", timeout);
  return headers;
}

class QueueFrontendWaitTest : public QueueFrontendTest {
 protected:
  // A saturated queue the frontend has measured, on its fake clock: 30 entries added, 2 taken
  // at T0, 10 more taken in the second that follows (the backlog never ran out): 11 entries/s
  // (10 + 1, the estimator's bound), 18 waiting: an entry added now waits 18 / 11 s = 1636 ms.
  void saturate() {
    start_frontend(clock_);
    add_entries(30);
    // A poll after the last XADD: a poll during them may have seen 28 (or 29) waiting, and the
    // waits below must not take that for the state after the takes.
    ASSERT_TRUE(run_until(io_, [&] { return frontend_->backlog() == 30; }));
    take_entries(2);
    ASSERT_TRUE(run_until(io_, [&] { return frontend_->backlog() == 28; }));
    take_entries(10);
    ASSERT_TRUE(run_until(io_, [&] { return frontend_->backlog() == 18; }));
    EXPECT_FALSE(frontend_->wait_estimator().drain_rate().has_value());  // no time passed yet
    clock_.advance(1s);
    ASSERT_TRUE(run_until(io_, [&] { return frontend_->wait_estimator().drain_rate(); }));
    EXPECT_DOUBLE_EQ(*frontend_->wait_estimator().drain_rate(), 11.0);
    ASSERT_EQ(entries_added(), 30);
  }
  // Sends one call; true when it was enqueued, false when it was answered without.
  bool enqueued(FakeStream& s) {
    frontend_->assign(s);
    s.send(grpc_message("x"), true);
    EXPECT_TRUE(run_until(io_, [&] { return s.closed_.has_value() || entries_added() > 30; }));
    return !s.closed_.has_value();
  }

  FakeClock clock_;
};

TEST_F(QueueFrontendWaitTest, ACallWhoseDeadlineIsShorterThanTheEstimatedWaitIsRefusedBeforeXadd) {
  saturate();
  EXPECT_TRUE(run_until(io_, [&] { return stats_.estimated_wait_ms.value() == 1636; }));
  EXPECT_DOUBLE_EQ(stats_.drain_rate.value(), 11.0);
  FakeStream s(call_with_timeout("1S"));
  EXPECT_FALSE(enqueued(s));
  EXPECT_EQ(s.header("grpc-status"), "8");
  const std::string message = s.header("grpc-message").value_or("");
  EXPECT_NE(message.find("queue 'work': estimated wait 1636 ms (backlog 18 at 11.0/s) exceeds the "
                         "call's remaining deadline"),
            std::string::npos)
      << message;
  // The pushback: how much longer the wait is than the deadline.
  const int pushback = std::stoi(s.header("grpc-retry-pushback-ms").value_or("0"));
  EXPECT_GE(pushback, 636);
  EXPECT_LT(pushback, 1636);
  EXPECT_EQ(stats_.frontend_rq_backpressure_total.value(), 1u);
  EXPECT_EQ(stats_.frontend_rq_backpressure_wait_total.value(), 1u);
  EXPECT_EQ(entries_added(), 30);  // nothing was added
}

TEST_F(QueueFrontendWaitTest, ACallWhoseDeadlineCoversTheEstimatedWaitIsEnqueued) {
  saturate();
  FakeStream s(call_with_timeout("5S"));
  EXPECT_TRUE(enqueued(s));
  EXPECT_EQ(entries_added(), 31);
  EXPECT_EQ(stats_.frontend_rq_backpressure_total.value(), 0u);
}

TEST_F(QueueFrontendWaitTest, ACallWithoutADeadlineIsNeverRefusedForTheWait) {
  saturate();
  FakeStream s(call_with_timeout(""));
  EXPECT_TRUE(enqueued(s));
  EXPECT_EQ(stats_.frontend_rq_backpressure_wait_total.value(), 0u);
}

TEST_F(QueueFrontendWaitTest, TheRuleCanBeTurnedOff) {
  queue_.shed_by_estimated_wait = false;
  saturate();
  FakeStream s(call_with_timeout("1S"));
  EXPECT_TRUE(enqueued(s));
  EXPECT_EQ(stats_.frontend_rq_backpressure_wait_total.value(), 0u);
}

TEST_F(QueueFrontendWaitTest, WithoutEvidenceOfTheConsumersCapacityNothingIsRefused) {
  start_frontend(clock_);
  add_entries(30);
  ASSERT_TRUE(run_until(io_, [&] { return frontend_->backlog() == 30; }));
  take_entries(1);
  ASSERT_TRUE(run_until(io_, [&] { return frontend_->backlog() == 29; }));
  clock_.advance(300ms);  // saturated, but for less than the 500 ms an estimate needs
  run_for(io_, 250ms);    // polls see it
  EXPECT_FALSE(frontend_->wait_estimator().drain_rate().has_value());
  FakeStream s(call_with_timeout("10m"));
  EXPECT_TRUE(enqueued(s));
}

TEST_F(QueueFrontendTest, ACancelledCallIgnoresItsLateReply) {
  start_frontend();
  FakeStream s(kCall);
  frontend_->assign(s);
  s.send(grpc_message("x"), true);
  const auto envelope = wait_envelope();
  ASSERT_TRUE(envelope.has_value());
  s.cancel();  // the stream's deadline or its client
  EXPECT_EQ(frontend_->open_calls(), 0u);
  QueueReply reply;
  reply.call_id = envelope->call_id;
  push_reply(envelope->reply_to, reply);
  run_for(io_, 100ms);
  EXPECT_FALSE(s.closed_.has_value());
  EXPECT_TRUE(s.events_.empty());
  EXPECT_EQ(stats_.frontend_rq_cancelled_total.value(), 1u);
}

TEST_F(QueueFrontendTest, AnUndecodableReplyIsCountedAndTheCallStillGetsItsOwn) {
  start_frontend();
  FakeStream s(kCall);
  frontend_->assign(s);
  s.send(grpc_message("x"), true);
  const auto envelope = wait_envelope();
  ASSERT_TRUE(envelope.has_value());
  bool pushed = false;
  consumer_->push_reply(envelope->reply_to, "not a reply", 60s, [&](auto) { pushed = true; });
  ASSERT_TRUE(run_until(io_, [&] { return pushed; }));
  ASSERT_TRUE(
      run_until(io_, [&] { return stats_.frontend_reply_decode_error_total.value() == 1; }));
  EXPECT_FALSE(s.closed_.has_value());
  QueueReply reply;
  reply.call_id = envelope->call_id;
  push_reply(envelope->reply_to, reply);
  ASSERT_TRUE(run_until(io_, [&] { return s.closed_.has_value(); }));
  EXPECT_EQ(stats_.frontend_rq_ok_total.value(), 1u);
}

TEST_F(QueueFrontendTest, ARedisRestartFailsTheWaitingCallsUnavailable) {
  start_frontend();
  FakeStream s(kCall);
  frontend_->assign(s);
  s.send(grpc_message("x"), true);
  ASSERT_TRUE(wait_entry().has_value());
  server_.stop();
  server_.start();
  ASSERT_TRUE(run_until(io_, [&] { return s.closed_.has_value(); }));
  EXPECT_EQ(s.header("grpc-status"), "14");
  EXPECT_EQ(stats_.frontend_rq_result_error_total.value(), 1u);
}

TEST_F(QueueFrontendTest, ACallAdmittedDuringTheFirstConnectWaitsForIt) {
  frontend_ = std::make_unique<QueueFrontend>(io_, queue_, "f", 0, cluster_stats_, stats_);
  frontend_->start();
  FakeStream s(kCall);
  frontend_->assign(s);  // the connect has not even begun: the io_context has not run
  EXPECT_FALSE(s.unavailable_.has_value());
  EXPECT_EQ(s.id_, -1);
  ASSERT_TRUE(run_until(io_, [&] { return s.id_ > 0; }));
  s.send(grpc_message("x"), true);
  EXPECT_TRUE(wait_entry().has_value());
}

TEST_F(QueueFrontendTest, ACallAdmittedDuringAFailingFirstConnectIsUnavailable) {
  queue_.redis.port = 1;
  frontend_ = std::make_unique<QueueFrontend>(io_, queue_, "f", 0, cluster_stats_, stats_);
  frontend_->start();
  FakeStream s(kCall);
  frontend_->assign(s);
  ASSERT_TRUE(run_until(
      io_, [&] { return s.unavailable_.has_value(); }, 2s));
  EXPECT_EQ(s.id_, -1);
}

TEST_F(QueueFrontendTest, PublishesRedisMemoryAndCpu) {
  start_frontend();
  ASSERT_TRUE(run_until(
      io_, [&] { return stats_.redis_used_memory_bytes.value() > 0; }, 3s));
  EXPECT_GT(stats_.redis_cpu_seconds.value(), 0.0);
}

TEST_F(QueueFrontendTest, OnlyWorkerZeroSetsTheSharedGauges) {
  frontend_ = std::make_unique<QueueFrontend>(io_, queue_, "f", 1, cluster_stats_, stats_);
  frontend_->start();
  for (int i = 0; i < 3; ++i) {
    bool done = false;
    consumer_->xadd(queue_.stream, {{"v", "1"}}, std::nullopt, [&](auto) { done = true; });
    ASSERT_TRUE(run_until(io_, [&] { return done; }));
  }
  ASSERT_TRUE(run_until(io_, [&] { return frontend_->backlog() == 3; }));  // its own view
  EXPECT_EQ(stats_.backlog.value(), 0);  // the gauge is worker 0's to set
}

}  // namespace
}  // namespace sluice::queue
