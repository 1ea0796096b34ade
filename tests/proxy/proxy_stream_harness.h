// The harness of the ProxyStream tests (proxy_stream_*_test.cc): ProxyStream driven through its two
// ports with real nghttp2 sessions joined in memory:
//
//   test client (ClientSession) <-> ServerSession [TestDownstream] -- ProxyStream --
//       [TestLink] ClientSession <-> test upstream (ServerSession)
//
// Time is a FakeClock: timers (deadlines, queue-wait budgets) fire only when the test advances
// it. Every test ends by checking that no illegal state transition happened.
#pragma once

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
#include "src/proxy/proxy_stream.h"
#include "src/stats/stats_registry.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_dispatcher.h"
#include "tests/fakes/recording_stream.h"

namespace sluice::proxy_test {

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
  explicit TestUpstreamPort(StatsRegistry& registry, const std::string& cluster = "app")
      : stats_(registry, cluster) {}

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

inline Recorded g_recorded;  // the factory is built through a plain function pointer

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

inline FilterRegistry with_recorder() {
  std::vector<FilterType> types = builtin_filters().types();
  types.push_back(FilterType{
      "recorder", [](const ConfigNode&) -> std::shared_ptr<const FilterParams> { return nullptr; },
      [](const FilterBuildContext&, const FilterParams&) -> std::unique_ptr<FilterFactory> {
        return std::make_unique<RecorderFactory>();
      }});
  return FilterRegistry(std::move(types));
}

inline FilterConfig recorder() { return FilterConfig{"recorder", "recorder", RecorderParams{}}; }

inline FilterConfig fixed_semaphore(uint32_t limit) {
  FixedSemaphoreConfig c;
  c.max_concurrency = limit;
  return FilterConfig{"fixed_semaphore", "fixed_semaphore", c};
}

inline FilterConfig queue_wait_budget(Duration budget) {
  QueueWaitBudgetConfig c;
  c.budget = budget;
  return FilterConfig{"queue_wait_budget", "queue_wait_budget", c};
}

// The worker's upstreams as a stream finds them: clusters "app" and "other"; no queues.
class TestUpstreams final : public UpstreamDirectory {
 public:
  TestUpstreams(TestUpstreamPort& app, TestUpstreamPort& other) : app_(app), other_(other) {}
  UpstreamPort* find(const UpstreamTarget& target) override {
    if (target.queue) return nullptr;
    if (target.cluster == "app") return &app_;
    if (target.cluster == "other") return &other_;
    return nullptr;
  }

 private:
  TestUpstreamPort& app_;
  TestUpstreamPort& other_;
};

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
    listener_ = std::make_unique<ListenerContext>(
        "ingress", registry_,
        make_listener_snapshot(listener_config_, UpstreamTarget{"app", std::nullopt},
                               std::move(chain), nullptr, nullptr));
    context_ = std::make_unique<StreamContext>(StreamContext{
        downstream_, upstreams_, *listener_, *listener_->current()->connection, dispatcher_});
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
      moved += other_.link.pump_once();
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
    respond_on(upstream_.link, id, body, finish, grpc_status);
  }
  void respond_on(TestLink& link, int32_t id, std::string_view body = "world", bool finish = true,
                  int grpc_status = 0) {
    RecordingStream& s = *link.server_owner.streams.at(id);
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
    link.server->submit_response(id, h, true);
    pump();
  }
  // What a reload does to the listener: a new snapshot for new calls, its calls going to
  // `cluster`.
  void point_listener_at(const std::string& cluster) {
    const auto current = listener_->current();
    listener_->publish(std::make_shared<const ListenerSnapshot>(
        ListenerSnapshot{current->chain, current->criticality, current->access_log,
                         current->connection, UpstreamTarget{cluster, std::nullopt}}));
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
  TestUpstreamPort other_{registry_, "other"};
  TestUpstreams upstreams_{upstream_, other_};
  TestDownstream downstream_;
  std::unique_ptr<StreamContext> context_;
  h2::RecordingClientOwner client_owner_;
  std::unique_ptr<h2::ClientSession> client_;
  std::map<int32_t, std::unique_ptr<RecordingStream>> calls_;
  bool alive_ = true;
  uint64_t illegal_before_ = 0;
  FilterRegistry types_ = with_recorder();
};

}  // namespace sluice::proxy_test
