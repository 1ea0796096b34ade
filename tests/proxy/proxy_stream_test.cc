// ProxyStream driven through its two ports with real nghttp2 sessions joined in memory:
//
//   test client (ClientSession) <-> ServerSession [TestDownstream] -- ProxyStream --
//       [TestLink] ClientSession <-> test upstream (ServerSession)
//
// Time is a FakeClock: timers (deadlines, queue-wait budgets) fire only when the test advances
// it. Every test ends by checking that no illegal state transition happened.
#include "src/proxy/proxy_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "filters/filter_chain.h"
#include "filters/filter_registry.h"
#include "filters/fixed_semaphore/fixed_semaphore.h"
#include "filters/queue_wait_budget/queue_wait_budget.h"
#include "src/h2/client_session.h"
#include "src/h2/server_session.h"
#include "src/proxy/cluster_stats.h"
#include "src/proxy/grpc_util.h"
#include "src/proxy/listener_context.h"
#include "src/stats/stats_registry.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_dispatcher.h"
#include "tests/fakes/recording_stream.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;
using h2::RecordingStream;

// The client connection: a real ServerSession whose streams are ProxyStreams.
class TestDownstream final : public DownstreamPort, public h2::ServerSession::Owner {
 public:
  void start(const Http2Config& settings, StreamContext& context) {
    context_ = &context;
    session_ = std::make_unique<h2::ServerSession>(*this, settings);
  }

  // DownstreamPort
  h2::ServerSession& session() override { return *session_; }
  void schedule_flush() override {}  // the test pumps every session until it is quiet
  void stream_finished(int32_t id, bool premature) override {
    finished.emplace_back(id, premature);
    auto it = streams.find(id);
    ASSERT_NE(it, streams.end());
    graveyard.push_back(std::move(it->second));  // destroyed after the callback, as for real
    streams.erase(it);
  }

  // h2::ServerSession::Owner
  h2::StreamEvents* on_new_stream(int32_t id) override {
    auto s = std::make_unique<ProxyStream>(*context_, id);
    h2::StreamEvents* events = s->downstream_events();
    streams.emplace(id, std::move(s));
    return events;
  }

  // The connection went away under its streams (socket error).
  void lose_connection() {
    for (auto& [id, s] : streams) s->on_downstream_gone();
    for (auto& [id, s] : streams) graveyard.push_back(std::move(s));
    streams.clear();
    session_.reset();
  }

  ProxyStream* stream(int32_t id) {
    auto it = streams.find(id);
    return it == streams.end() ? nullptr : it->second.get();
  }

  std::map<int32_t, std::unique_ptr<ProxyStream>> streams;
  std::vector<std::unique_ptr<ProxyStream>> graveyard;
  std::vector<std::pair<int32_t, bool>> finished;  // (stream id, premature)

 private:
  StreamContext* context_ = nullptr;
  std::unique_ptr<h2::ServerSession> session_;
};

// One upstream HTTP/2 connection: sluice's ClientSession, joined to a test upstream server.
class TestLink final : public UpstreamLink {
 public:
  TestLink() {
    client = std::make_unique<h2::ClientSession>(client_owner, Http2Config{});
    server = std::make_unique<h2::ServerSession>(server_owner, Http2Config{});
  }

  // UpstreamLink
  int32_t submit(const std::vector<nghttp2_nv>& headers, bool with_body,
                 h2::StreamEvents* events) override {
    if (refuse_submit) return submit_error;
    return client->submit_request(headers, with_body, events);
  }
  void resume_request(int32_t id) override { client->resume_data(id); }
  void consume_response(int32_t id, std::size_t n) override { client->consume_stream(id, n); }
  void cancel(int32_t id) override {
    ++cancels;
    client->reset_stream(id, NGHTTP2_CANCEL);
    client->detach_stream(id);
  }
  void release(UpstreamClient& c) override {
    ++releases[&c];
    std::erase(pending, &c);
    active.erase(&c);
  }
  bool request_sent(int32_t id) const override { return client->request_sent(id); }

  std::size_t pump_once() {
    if (dead || paused) return 0;
    const std::size_t moved = h2::transfer(*client, *server) + h2::transfer(*server, *client);
    // The upstream reads everything it is sent: its windows reopen as bytes arrive.
    for (auto& [id, s] : server_owner.streams) {
      std::size_t& seen = consumed[id];
      if (s->received.size() > seen) {
        server->consume_stream(id, s->received.size() - seen);
        seen = s->received.size();
      }
    }
    return moved;
  }

  h2::RecordingClientOwner client_owner;
  h2::RecordingServerOwner server_owner;  // the upstream's view: one RecordingStream per request
  std::unique_ptr<h2::ClientSession> client;
  std::unique_ptr<h2::ServerSession> server;
  bool refuse_submit = false;
  int32_t submit_error = NGHTTP2_ERR_INVALID_ARGUMENT;
  bool dead = false;
  bool paused = false;  // nothing moves: what was submitted is not sent
  int cancels = 0;
  std::map<UpstreamClient*, int> releases;
  std::map<int32_t, std::size_t> consumed;  // request bytes the upstream has read, per stream
  // As a real connection keeps them: assigned while connecting, and sent on it.
  std::vector<UpstreamClient*> pending;
  std::set<UpstreamClient*> active;
};

// The cluster: hands out the one TestLink, at once or when the test says it is ready.
class TestUpstreamPort final : public UpstreamPort {
 public:
  enum class Mode { Ready, Hold, Unavailable };
  explicit TestUpstreamPort(StatsRegistry& registry) : stats_(registry, "app") {}

  void assign(UpstreamClient& c) override {
    ++assignments;
    switch (mode) {
      case Mode::Ready:
        c.on_upstream_assigned(link);
        link.active.insert(&c);
        c.on_upstream_ready();
        return;
      case Mode::Hold:
        c.on_upstream_assigned(link);
        link.pending.push_back(&c);
        return;
      case Mode::Unavailable:
        c.on_upstream_unavailable("upstream cluster 'app' unavailable: test");
        return;
    }
  }
  void reassign(UpstreamClient& c, const UpstreamLink& failed) override {
    ++reassignments;
    EXPECT_EQ(&failed, &link);
    if (!use_second) {
      assign(c);
      return;
    }
    c.on_upstream_assigned(second);  // another connection, ready
    second.active.insert(&c);
    c.on_upstream_ready();
  }
  ClusterStats& stats() override { return stats_; }
  std::optional<Duration> max_stream_duration() const override { return max_duration; }

  // The held connection is up: what waited is submitted.
  void make_ready() {
    std::vector<UpstreamClient*> waiting;
    waiting.swap(link.pending);
    for (UpstreamClient* c : waiting) {
      link.active.insert(c);
      c->on_upstream_ready();
    }
  }
  // The held connection failed before it was up.
  void fail_held() {
    std::vector<UpstreamClient*> waiting;
    waiting.swap(link.pending);
    for (UpstreamClient* c : waiting) c->on_upstream_unavailable("connect failed: test");
  }
  // The connection died: the streams on it learn it, then it is gone.
  void lose_connection() {
    link.dead = true;
    std::set<UpstreamClient*> open;
    open.swap(link.active);
    for (UpstreamClient* c : open) c->on_upstream_connection_lost("test closed the connection");
  }

  Mode mode = Mode::Ready;
  TestLink link;
  TestLink second;  // where reassign() sends a stream when use_second is set
  bool use_second = false;
  int assignments = 0;
  int reassignments = 0;  // of these, for streams the upstream never saw
  std::optional<Duration> max_duration;

 private:
  ClusterStats stats_;
};

// A filter type of the test's own, added to a registry beside sluice's: it records what a filter
// is told about each request.
struct Recorded {
  std::vector<Criticality> classes;
  std::vector<ResponseStart> responses;
  std::vector<std::string> events;  // "request", "abandoned", "response", "complete"
};

class RecorderFilter final : public StreamFilter {
 public:
  explicit RecorderFilter(Recorded& r) : r_(r) {}
  FilterStatus on_request(FilterCallbacks& cb) override {
    r_.classes.push_back(cb.request().criticality);
    r_.events.push_back("request");
    return FilterStatus::Continue;
  }
  void on_abandoned() override { r_.events.push_back("abandoned"); }
  void on_response(const ResponseStart& response) override {
    r_.responses.push_back(response);
    r_.events.push_back("response");
  }
  void on_complete(const RequestOutcome&) override { r_.events.push_back("complete"); }

 private:
  Recorded& r_;
};

Recorded g_recorded;  // the factory is built through a plain function pointer

class RecorderFactory final : public FilterFactory {
 public:
  const std::string& name() const override { return name_; }
  const std::string& type() const override { return name_; }
  std::unique_ptr<StreamFilter> create() override {
    return std::make_unique<RecorderFilter>(g_recorded);
  }

 private:
  const std::string name_ = "recorder";
};

struct RecorderParams {
  bool operator==(const RecorderParams&) const = default;
  void dump(boost::json::object&) const {}
};

FilterRegistry with_recorder() {
  std::vector<FilterType> types = builtin_filters().types();
  types.push_back(FilterType{
      "recorder", [](const ConfigNode&) -> std::shared_ptr<const FilterParams> { return nullptr; },
      [](const FilterBuildContext&, const FilterParams&) -> std::unique_ptr<FilterFactory> {
        return std::make_unique<RecorderFactory>();
      }});
  return FilterRegistry(std::move(types));
}

FilterConfig recorder() { return FilterConfig{"recorder", "recorder", RecorderParams{}}; }

FilterConfig fixed_semaphore(uint32_t limit) {
  FixedSemaphoreConfig c;
  c.max_concurrency = limit;
  return FilterConfig{"fixed_semaphore", "fixed_semaphore", c};
}

FilterConfig queue_wait_budget(Duration budget) {
  QueueWaitBudgetConfig c;
  c.budget = budget;
  return FilterConfig{"queue_wait_budget", "queue_wait_budget", c};
}

class ProxyStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    illegal_before_ = ProxyStream::illegal_transitions();
    g_recorded = Recorded{};
  }
  void TearDown() override {
    EXPECT_EQ(ProxyStream::illegal_transitions(), illegal_before_) << "illegal state transition";
  }

  void start(std::vector<FilterConfig> filters = {}) {
    listener_config_.name = "ingress";
    listener_config_.filters = std::move(filters);
    std::unique_ptr<FilterChain> chain;
    if (!listener_config_.filters.empty()) {
      chain = make_filter_chain(listener_config_.filters, "ingress", registry_, clock_, types_);
    }
    listener_ = std::make_unique<ListenerContext>(listener_config_, 0, registry_, std::move(chain),
                                                  nullptr);
    context_ = std::make_unique<StreamContext>(
        StreamContext{downstream_, upstream_, *listener_, dispatcher_});
    downstream_.start(listener_config_.http2, *context_);
    client_ = std::make_unique<h2::ClientSession>(client_owner_, Http2Config{});
    pump();
  }

  // Opens a call from the test client; `body` is sent and the request ended unless `open`.
  int32_t call(std::string_view body = "hello", std::optional<std::string> timeout = std::nullopt,
               bool open = false, std::string_view content_type = "application/grpc",
               std::string_view path = "/pkg.Svc/Method",
               std::optional<std::string> criticality = std::nullopt) {
    h2::HeaderBlock h;
    h.add(":method", "POST");
    h.add(":scheme", "http");
    h.add(":authority", "test");
    h.add(":path", path);
    h.add("content-type", content_type);
    h.add("te", "trailers");
    if (timeout) h.add("grpc-timeout", *timeout);
    if (criticality) h.add("x-sluice-criticality", *criticality);
    auto rec = std::make_unique<RecordingStream>();
    h2::fill(rec->body, body);
    if (!open) rec->body.finish();
    const int32_t id = client_->submit_request(h, true, rec.get());
    EXPECT_GT(id, 0);
    calls_[id] = std::move(rec);
    pump();
    return id;
  }

  // Moves bytes over both session pairs and runs posted work until everything is quiet.
  void pump() {
    for (int round = 0; round < 1000; ++round) {
      std::size_t moved = 0;
      if (alive_) {
        moved += h2::transfer(*client_, downstream_.session());
        moved += h2::transfer(downstream_.session(), *client_);
      }
      moved += upstream_.link.pump_once();
      moved += upstream_.second.pump_once();
      moved += dispatcher_.run_pending();
      downstream_.graveyard.clear();
      if (moved == 0) return;
    }
    FAIL() << "sessions did not go quiet";
  }

  RecordingStream& client_call(int32_t id) { return *calls_.at(id); }
  // The requests the test upstream received, in stream-id order.
  std::vector<std::pair<int32_t, RecordingStream*>> upstream_requests() {
    std::vector<std::pair<int32_t, RecordingStream*>> out;
    for (auto& [id, s] : upstream_.link.server_owner.streams) out.emplace_back(id, s.get());
    return out;
  }
  int32_t only_upstream_request() {
    auto reqs = upstream_requests();
    EXPECT_EQ(reqs.size(), 1u);
    return reqs.empty() ? -1 : reqs[0].first;
  }
  // The test upstream answers request `id`: headers now, then `body` and trailers unless open.
  void respond(int32_t id, std::string_view body = "world", bool finish = true,
               int grpc_status = 0) {
    RecordingStream& s = *upstream_.link.server_owner.streams.at(id);
    h2::HeaderBlock h;
    h.add(":status", "200");
    h.add("content-type", "application/grpc");
    h2::fill(s.body, body);
    if (finish) {
      h2::HeaderBlock t;
      t.add("grpc-status", std::to_string(grpc_status));
      s.body.set_trailers(std::move(t));
    }
    s.serve = true;
    upstream_.link.server->submit_response(id, h, true);
    pump();
  }
  void upstream_reset(int32_t id, uint32_t code) {
    upstream_.link.server->reset_stream(id, code);
    pump();
  }
  void client_reset(int32_t id) {
    client_->reset_stream(id, NGHTTP2_CANCEL);
    pump();
  }
  void advance(Duration d) {
    clock_.advance(d);
    pump();
  }

  uint64_t ended(EndReason r) { return listener_->stats.by_reason(r).value(); }
  ClusterStats& cluster() { return upstream_.stats(); }

  FakeClock clock_;
  FakeDispatcher dispatcher_{clock_};
  StatsRegistry registry_;
  ListenerConfig listener_config_;
  std::unique_ptr<ListenerContext> listener_;
  TestUpstreamPort upstream_{registry_};
  TestDownstream downstream_;
  std::unique_ptr<StreamContext> context_;
  h2::RecordingClientOwner client_owner_;
  std::unique_ptr<h2::ClientSession> client_;
  std::map<int32_t, std::unique_ptr<RecordingStream>> calls_;
  bool alive_ = true;
  uint64_t illegal_before_ = 0;
  FilterRegistry types_ = with_recorder();
};

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
