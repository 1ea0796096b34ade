// QueueConsumer against a real redis-server and an in-memory upstream (an UpstreamPort whose
// link answers every stream with a scripted response): entries read, run, replied,
// acknowledged and deleted; expired entries replied without a call; bad entries dead-lettered;
// the window (COUNT) follows the limiter; drain waits for the calls in hand.
#include "src/queue/queue_consumer.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "filters/aimd/aimd.h"
#include "filters/filter_registry.h"
#include "filters/fixed_semaphore/fixed_semaphore.h"
#include "src/core/asio_dispatcher.h"
#include "src/h2/body_buffer.h"
#include "src/h2/header_block.h"
#include "src/proxy/cluster_stats.h"
#include "tests/queue/io_wait.h"
#include "tests/queue/redis_server.h"

namespace sluice::queue {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// The cluster: answers each stream after `delay` with headers, the request body echoed,
// trailers grpc-status 0 (and the request's grpc-timeout echoed in x-timeout).
class FakeUpstream final : public UpstreamPort, public UpstreamLink {
 public:
  FakeUpstream(asio::io_context& io, StatsRegistry& r) : io_(io), stats_(r, "app") {}

  void assign(UpstreamClient& client) override {
    client.on_upstream_assigned(*this);
    pending_client_ = &client;
    client.on_upstream_ready();
    pending_client_ = nullptr;
  }
  void reassign(UpstreamClient& client, const UpstreamLink&) override { assign(client); }
  ClusterStats& stats() override { return stats_; }
  std::optional<Duration> max_stream_duration() const override { return std::nullopt; }

  int32_t submit(const std::vector<nghttp2_nv>& headers, bool, h2::StreamEvents* events) override {
    const int32_t id = next_id_++;
    Stream s;
    s.events = events;
    for (const auto& nv : headers) {
      s.headers.emplace_back(std::string(reinterpret_cast<const char*>(nv.name), nv.namelen),
                             std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen));
    }
    streams_[id] = s;
    ++calls_;
    in_flight_ = static_cast<int>(streams_.size());
    max_in_flight_ = std::max(max_in_flight_, in_flight_);
    auto timer = std::make_shared<asio::steady_timer>(io_, delay_);
    timer->async_wait([this, id, timer](const boost::system::error_code&) { respond(id); });
    return id;
  }
  void resume_request(int32_t) override {}
  void consume_response(int32_t, std::size_t) override {}
  void cancel(int32_t id) override {
    streams_.erase(id);
    ++cancelled_;
  }
  void release(UpstreamClient&) override {}
  bool request_sent(int32_t) const override { return true; }

  void respond(int32_t id) {
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    Stream s = it->second;
    streams_.erase(it);
    in_flight_ = static_cast<int>(streams_.size());
    h2::BodyBuffer* body = s.events->outgoing();
    h2::OutputQueue q;
    std::string request;
    if (body != nullptr) {
      body->take(body->size(), q);
      q.for_each_front(SIZE_MAX, [&](const uint8_t* d, std::size_t n) {
        request.append(reinterpret_cast<const char*>(d), n);
      });
    }
    std::string timeout = "none";
    for (const auto& [n, v] : s.headers) {
      if (n == "grpc-timeout") timeout = v;
    }
    last_headers_ = s.headers;
    s.events->on_headers_begin(true);
    s.events->on_header(":status", "200", false);
    s.events->on_header("content-type", "application/grpc", false);
    s.events->on_header("x-timeout", timeout, false);
    s.events->on_headers_end(false);
    s.events->on_data(reinterpret_cast<const uint8_t*>(request.data()), request.size());
    s.events->on_headers_begin(false);
    s.events->on_header("grpc-status", grpc_status_, false);
    s.events->on_header("x-trailer", "t", false);
    s.events->on_headers_end(true);
    s.events->on_close(0);
  }

  struct Stream {
    h2::StreamEvents* events = nullptr;
    std::vector<std::pair<std::string, std::string>> headers;
  };
  asio::io_context& io_;
  ClusterStats stats_;
  UpstreamClient* pending_client_ = nullptr;
  std::map<int32_t, Stream> streams_;
  int32_t next_id_ = 1;
  Duration delay_ = 5ms;
  std::string grpc_status_ = "0";  // what every call ends with
  int calls_ = 0;
  int cancelled_ = 0;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
  std::vector<std::pair<std::string, std::string>> last_headers_;
};

// A limiter filter's factory that records the demand pressure it is told of.
class DemandSpy final : public FilterFactory {
 public:
  explicit DemandSpy(std::shared_ptr<FilterFactory> inner) : inner_(std::move(inner)) {}
  const std::string& name() const override { return inner_->name(); }
  const std::string& type() const override { return inner_->type(); }
  std::unique_ptr<StreamFilter> create() override { return inner_->create(); }
  std::unique_ptr<LimiterSnapshot> snapshot() const override { return inner_->snapshot(); }
  void on_demand_pressure() override { ++told; }

  int told = 0;

 private:
  std::shared_ptr<FilterFactory> inner_;
};

class QueueConsumerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    queue_.name = "work";
    queue_.redis = {"127.0.0.1", server_.port()};
    queue_.stream = "sluice:work";
    queue_.group = "g";
    queue_.claim_after = 300ms;
    queue_.max_deliveries = 2;
    consumer_config_.name = "pull";
    consumer_config_.queue = "work";
    consumer_config_.cluster = "app";
  }
  void TearDown() override {
    consumer_.reset();
    run_for(io_, 10ms);
  }

  void start(std::shared_ptr<const FilterChain> chain = nullptr, const std::string& name = "c1") {
    consumer_ = std::make_unique<QueueConsumer>(io_, dispatcher_, queue_, consumer_config_, name,
                                                std::move(chain), upstream_, stats_);
    consumer_->start();
    run_for(io_, 50ms);
  }

  QueueEnvelope envelope(const std::string& call_id, int64_t deadline_ms = 0) {
    QueueEnvelope e;
    e.method = "/pkg.Svc/Get";
    e.call_id = call_id;
    e.reply_to = "replies";
    e.frontend = "f";
    e.deadline_unix_ms = deadline_ms;
    e.enqueued_unix_ms = unix_ms_now();
    e.metadata = {{":method", "POST"},
                  {":scheme", "http"},
                  {":path", "/pkg.Svc/Get"},
                  {":authority", "svc"},
                  {"content-type", "application/grpc"},
                  {"x-user", "alice"}};
    e.body = std::string("\0\0\0\0\x02hi", 7);
    return e;
  }
  void add(const StreamFields& fields) {
    std::vector<std::string> cmd = {"XADD", queue_.stream, "*"};
    for (const auto& [n, v] : fields) {
      cmd.push_back(n);
      cmd.push_back(v);
    }
    server_.command(cmd);
  }
  std::vector<QueueReply> replies() {
    std::vector<QueueReply> out;
    const RespValue v = server_.command({"LRANGE", "replies", "0", "-1"});
    for (const RespValue& e : v.elements()) {
      auto r = QueueReply::decode(e.str());
      EXPECT_TRUE(r.ok());
      if (r) out.push_back(*r);
    }
    return out;
  }
  bool wait_replies(std::size_t n, std::chrono::milliseconds timeout = 5s) {
    return run_until(
        io_, [&] { return replies().size() >= n; }, timeout);
  }

  RedisServer server_;
  asio::io_context io_{1};
  AsioDispatcher dispatcher_{io_, 0};
  StatsRegistry registry_;
  FakeUpstream upstream_{io_, registry_};
  ConsumerStats stats_{registry_, "pull"};
  QueueConfig queue_;
  ConsumerConfig consumer_config_;
  std::unique_ptr<QueueConsumer> consumer_;
};

TEST_F(QueueConsumerTest, RunsAnEntryRepliesAndRemovesIt) {
  start();
  add(envelope("1", unix_ms_now() + 5000).encode());
  ASSERT_TRUE(wait_replies(1));
  const QueueReply r = replies().at(0);
  EXPECT_EQ(r.call_id, "1");
  EXPECT_EQ(r.consumer, "c1");
  EXPECT_EQ(r.grpc_status, 0);
  EXPECT_EQ(r.body, std::string("\0\0\0\0\x02hi", 7));
  ASSERT_GE(r.headers.size(), 3u);
  EXPECT_EQ(r.headers[0], (std::pair<std::string, std::string>{":status", "200"}));
  EXPECT_EQ(r.trailers, (Metadata{{"grpc-status", "0"}, {"x-trailer", "t"}}));
  // The service got the caller's metadata and the time it has left.
  bool user = false;
  std::string timeout;
  for (const auto& [n, v] : upstream_.last_headers_) {
    if (n == "x-user" && v == "alice") user = true;
    if (n == "grpc-timeout") timeout = v;
  }
  EXPECT_TRUE(user);
  ASSERT_FALSE(timeout.empty());
  EXPECT_EQ(upstream_.last_headers_.at(0).first, ":method");
  ASSERT_TRUE(run_until(io_, [&] {
    return server_.command({"XLEN", queue_.stream}).integer() == 0;
  }));
  EXPECT_EQ(server_.command({"XPENDING", queue_.stream, "g"}).elements().at(0).integer(), 0);
  EXPECT_EQ(stats_.consumer_rq_completed_total.value(), 1u);
  EXPECT_EQ(stats_.completed_by_grpc_status[0]->value(), 1u);
  EXPECT_EQ(consumer_->in_hand(), 0u);
}

TEST_F(QueueConsumerTest, CompletedCallsAreCountedByTheirReplysStatus) {
  start();
  add(envelope("1", unix_ms_now() + 5000).encode());
  ASSERT_TRUE(wait_replies(1));
  upstream_.grpc_status_ = "9";
  add(envelope("2", unix_ms_now() + 5000).encode());
  add(envelope("3", unix_ms_now() + 5000).encode());
  ASSERT_TRUE(wait_replies(3));
  add(envelope("4", unix_ms_now() - 10).encode());  // expired: answered, not completed
  ASSERT_TRUE(wait_replies(4));
  EXPECT_EQ(replies().at(1).grpc_status, 9);
  EXPECT_EQ(stats_.consumer_rq_completed_total.value(), 3u);
  EXPECT_EQ(stats_.completed_by_grpc_status[0]->value(), 1u);
  EXPECT_EQ(stats_.completed_by_grpc_status[9]->value(), 2u);
  EXPECT_EQ(stats_.completed_by_grpc_status[4]->value(), 0u);
  EXPECT_EQ(stats_.consumer_rq_expired_total.value(), 1u);
  uint64_t counted = 0;
  for (const StatValue& v : registry_.snapshot()) {
    if (v.name.dotted().starts_with("consumer.pull.consumer_rq_completed_grpc_status_")) {
      counted += static_cast<uint64_t>(v.number);
    }
  }
  EXPECT_EQ(counted, 3u);  // 0..16 and invalid, each call once
}

TEST_F(QueueConsumerTest, AnExpiredEntryIsAnsweredWithoutCallingTheService) {
  start();
  add(envelope("1", unix_ms_now() - 10).encode());
  ASSERT_TRUE(wait_replies(1));
  EXPECT_EQ(replies().at(0).grpc_status, 4);
  EXPECT_NE(replies().at(0).grpc_message.find("deadline exceeded while queued"), std::string::npos);
  EXPECT_TRUE(replies().at(0).headers.empty());
  EXPECT_EQ(upstream_.calls_, 0);
  EXPECT_EQ(stats_.consumer_rq_expired_total.value(), 1u);
}

TEST_F(QueueConsumerTest, AnUndecodableEntryIsDeadLettered) {
  start();
  add({{"v", "1"}, {"call_id", "9"}, {"reply_to", "replies"}});  // no method, no body
  ASSERT_TRUE(run_until(io_, [&] {
    return server_.command({"XLEN", queue_.stream + ":dead"}).integer() == 1;
  }));
  ASSERT_TRUE(wait_replies(1));
  EXPECT_EQ(replies().at(0).grpc_status, 14);
  EXPECT_NE(replies().at(0).grpc_message.find("dead-lettered"), std::string::npos);
  EXPECT_EQ(server_.command({"XLEN", queue_.stream}).integer(), 0);
}

TEST_F(QueueConsumerTest, NeverReadsMoreThanItsLimiterCanAdmit) {
  std::vector<FilterConfig> filters;
  FixedSemaphoreConfig fs;
  fs.max_concurrency = 2;
  fs.max_queue = 0;
  filters.emplace_back("fixed_semaphore", "fixed_semaphore", fs);
  std::shared_ptr<const FilterChain> chain =
      make_filter_chain(filters, "consumer:pull", registry_, RealClock::instance());
  upstream_.delay_ = 100ms;
  for (int i = 0; i < 6; ++i) add(envelope(std::to_string(i), unix_ms_now() + 10000).encode());
  start(chain);
  // Wait for the state, not a fixed time: on a loaded machine connecting to Redis and the first
  // XREADGROUP can take longer than the 100 ms a call runs (CI once read in_hand 0 after 50 ms).
  ASSERT_TRUE(run_until(io_, [&] { return consumer_->in_hand() == 2u; }));
  // Two running, four still undelivered in the stream: nothing prefetched. What the consumer
  // holds, as Redis sees it, is what the group delivered (entries-read) less the replies pushed;
  // it never exceeds the two permits. (Not XPENDING: that also holds entries whose reply is
  // pushed and whose XACK is on its way, and the next read does not wait for that round trip.)
  // The test's commands run while the consumer's loop does not, so nothing of the consumer's
  // changes between them except what Redis had already received, which can only lower the
  // difference (a read not yet counted, a reply already counted).
  std::size_t most_held = 0;
  std::size_t most_in_hand = 0;
  ASSERT_TRUE(run_until(io_, [&] {
    const RespValue groups = server_.command({"XINFO", "GROUPS", queue_.stream});
    const std::size_t n = replies().size();
    const auto& g = groups.elements().at(0).elements();
    for (std::size_t i = 0; i + 1 < g.size(); i += 2) {
      if (g[i].str() == "entries-read" && g[i + 1].is_integer()) {
        most_held = std::max(most_held, static_cast<std::size_t>(g[i + 1].integer()) - n);
      }
    }
    most_in_hand = std::max(most_in_hand, consumer_->in_hand());
    return n >= 6;
  }));
  EXPECT_EQ(most_held, 2u);
  EXPECT_EQ(most_in_hand, 2u);
  EXPECT_EQ(upstream_.max_in_flight_, 2);
  EXPECT_EQ(stats_.consumer_rq_completed_total.value(), 6u);
}

TEST_F(QueueConsumerTest, DemandPressureIsEntriesWaitingWhileTheWindowIsFull) {
  std::vector<FilterConfig> filters;
  FixedSemaphoreConfig fs;
  fs.max_concurrency = 1;
  fs.max_queue = 0;
  filters.emplace_back("fixed_semaphore", "fixed_semaphore", fs);
  auto spy = std::make_shared<DemandSpy>(
      make_filter_chain(filters, "consumer:pull", registry_, RealClock::instance())
          ->shared_factory(0));
  upstream_.delay_ = 150ms;
  start(std::make_shared<FilterChain>("consumer:pull",
                                      std::vector<std::shared_ptr<FilterFactory>>{spy}));
  // One entry: the window is full, but nothing waits behind it.
  add(envelope("1", unix_ms_now() + 10000).encode());
  ASSERT_TRUE(run_until(io_, [&] { return consumer_->in_hand() == 1u; }));
  ASSERT_TRUE(wait_replies(1));
  EXPECT_EQ(spy->told, 0);
  EXPECT_EQ(stats_.consumer_demand_pressure_total.value(), 0u);
  // Three more: two of them wait while the one permit is in use.
  for (int i = 2; i <= 4; ++i) add(envelope(std::to_string(i), unix_ms_now() + 10000).encode());
  ASSERT_TRUE(wait_replies(4));
  EXPECT_GE(spy->told, 1);
  EXPECT_EQ(stats_.consumer_demand_pressure_total.value(), static_cast<uint64_t>(spy->told));
  EXPECT_EQ(upstream_.max_in_flight_, 1);  // still never more than it can start
}

TEST_F(QueueConsumerTest, AnAimdConsumerGrowsItsWindowUnderABacklog) {
  // Without demand pressure an aimd limit never grows: a consumer never waits for a permit.
  std::vector<FilterConfig> filters;
  AimdConfig aimd;
  aimd.latency_slo = 500ms;
  aimd.initial_limit = 1;
  aimd.interval = 50ms;
  aimd.max_queue = 0;
  filters.emplace_back("aimd", "aimd", aimd);
  std::shared_ptr<const FilterChain> chain =
      make_filter_chain(filters, "consumer:pull", registry_, RealClock::instance());
  upstream_.delay_ = 1ms;
  for (int i = 0; i < 400; ++i) add(envelope(std::to_string(i), unix_ms_now() + 30000).encode());
  start(chain);
  ASSERT_TRUE(run_until(
      io_, [&] { return replies().size() >= 400; }, 30s));
  EXPECT_GT(chain->factory(0).snapshot()->limit, 1u);
  EXPECT_GT(upstream_.max_in_flight_, 1);
  EXPECT_GE(stats_.consumer_demand_pressure_total.value(), 1u);
}

TEST_F(QueueConsumerTest, TakesOverEntriesOfADeadConsumerAfterClaimAfter) {
  add(envelope("1", unix_ms_now() + 10000).encode());
  // A consumer that read the entry and died.
  server_.command({"XGROUP", "CREATE", queue_.stream, "g", "0", "MKSTREAM"});
  server_.command(
      {"XREADGROUP", "GROUP", "g", "dead", "COUNT", "1", "STREAMS", queue_.stream, ">"});
  start();
  run_for(io_, 100ms);
  EXPECT_TRUE(replies().empty());  // not before claim_after
  ASSERT_TRUE(wait_replies(1, 3s));
  EXPECT_EQ(replies().at(0).grpc_status, 0);
  EXPECT_EQ(stats_.consumer_rq_claimed_total.value(), 1u);
}

TEST_F(QueueConsumerTest, AnEntryDeliveredTooOftenIsDeadLetteredAndItsCallerTold) {
  add(envelope("1", unix_ms_now() + 10000).encode());
  server_.command({"XGROUP", "CREATE", queue_.stream, "g", "0", "MKSTREAM"});
  // Delivered twice already (max_deliveries 2): the next take-over is one too many.
  server_.command(
      {"XREADGROUP", "GROUP", "g", "dead1", "COUNT", "1", "STREAMS", queue_.stream, ">"});
  const RespValue pending = server_.command({"XPENDING", queue_.stream, "g", "-", "+", "1"});
  const std::string id = pending.elements().at(0).elements().at(0).str();
  server_.command({"XCLAIM", queue_.stream, "g", "dead2", "0", id});
  start();
  ASSERT_TRUE(wait_replies(1, 3s));
  EXPECT_EQ(replies().at(0).grpc_status, 14);
  EXPECT_NE(replies().at(0).grpc_message.find("max_deliveries 2"), std::string::npos);
  EXPECT_EQ(server_.command({"XLEN", queue_.stream + ":dead"}).integer(), 1);
  EXPECT_EQ(upstream_.calls_, 0);
}

TEST_F(QueueConsumerTest, DrainFinishesTheCallsInHandAndReadsNoMore) {
  upstream_.delay_ = 200ms;
  start();
  add(envelope("1", unix_ms_now() + 10000).encode());
  ASSERT_TRUE(run_until(io_, [&] { return consumer_->in_hand() == 1; }));
  bool drained = false;
  consumer_->drain([&] { drained = true; });
  run_for(io_, 100ms);
  EXPECT_FALSE(drained);  // the call in hand is still running
  ASSERT_TRUE(run_until(io_, [&] { return drained; }));
  // Replied and acknowledged before drained.
  ASSERT_EQ(replies().size(), 1u);
  EXPECT_EQ(replies().at(0).call_id, "1");
  EXPECT_EQ(server_.command({"XLEN", queue_.stream}).integer(), 0);
  // It left the group (nothing pending under its name).
  EXPECT_TRUE(server_.command({"XINFO", "CONSUMERS", queue_.stream, "g"}).elements().empty());
  add(envelope("2", unix_ms_now() + 10000).encode());
  run_for(io_, 200ms);
  EXPECT_EQ(upstream_.calls_, 1);  // it reads no more: entry 2 stays for another consumer
  EXPECT_EQ(server_.command({"XLEN", queue_.stream}).integer(), 1);
}

}  // namespace
}  // namespace sluice::queue
