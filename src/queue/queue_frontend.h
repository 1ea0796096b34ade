// Queue mode, frontend side: what stands where a cluster's UpstreamPool stands for a listener
// with `queue:`. To a ProxyStream it is a port whose one link never fails to open a stream; the
// "stream" collects the request, enqueues it (XADD of a QueueEnvelope) and, when the consumer's
// reply comes back through the worker's ReplyInbox, plays it to the stream as the upstream's
// response: headers, body, trailers and grpc-status unchanged. ProxyStream stays as it is: the
// filters, the deadline timer, the local replies and the stats work as for a cluster.
//
// Answers it makes itself, as trailers-only upstream responses (so the stream forwards them):
//   - a second request message (client or bidi streaming): UNIMPLEMENTED, before any XADD;
//   - a request body above kMaxBody: RESOURCE_EXHAUSTED;
//   - backlog (entries not yet delivered, polled) >= max_pending: RESOURCE_EXHAUSTED with
//     grpc-retry-pushback-ms, before XADD;
//   - the estimated wait of a new entry (backlog / the consumers' drain rate, WaitEstimator)
//     longer than the call's remaining deadline: RESOURCE_EXHAUSTED with grpc-retry-pushback-ms,
//     before XADD (it would only expire in the stream). Calls without a deadline never are;
//   - XADD failed, or the reply path lost the call (Redis restarted): UNAVAILABLE.
// Redis unreachable when the call is admitted: on_upstream_unavailable(), which the stream
// answers UNAVAILABLE at once (RedisConnection fails fast while disconnected). Only a call
// admitted while the very first connect is under way waits for it (at most connect_timeout). The
// caller's deadline is the stream's own timer (DEADLINE_EXCEEDED); it cancels the call here, and
// the envelope carries the absolute deadline so that consumers skip expired entries.
//
// Everything it tells a stream is posted to the io_context, never done inside a call from the
// stream (a reply played inside submit() would reach the stream before it knows it submitted).
// One per worker and queue; every member runs on the worker's thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "src/config/config.h"
#include "src/core/grpc_status.h"
#include "src/h2/output_queue.h"
#include "src/proxy/upstream_port.h"
#include "src/queue/queue_envelope.h"
#include "src/queue/queue_reply.h"
#include "src/queue/queue_stats.h"
#include "src/queue/redis_connection.h"
#include "src/queue/redis_streams.h"
#include "src/queue/reply_inbox.h"
#include "src/queue/wait_estimator.h"

namespace sluice::queue {

class QueueFrontend final : public UpstreamPort, public UpstreamLink {
 public:
  // gRPC's default max message size: a unary request larger than this is refused.
  static constexpr std::size_t kMaxBody = std::size_t{4} * 1024 * 1024;
  // How often the backlog (the group's lag) is polled for max_pending.
  static constexpr Duration kBacklogPoll = std::chrono::milliseconds(100);
  // The pushback a RESOURCE_EXHAUSTED for backlog carries.
  static constexpr Duration kBacklogPushback = std::chrono::milliseconds(250);
  // A refusal for the estimated wait pushes back by the excess of the wait over the call's
  // deadline (when the backlog ahead would have drained enough at the current rate), within
  // these bounds.
  static constexpr Duration kWaitPushbackMin = std::chrono::milliseconds(100);
  static constexpr Duration kWaitPushbackMax = std::chrono::seconds(10);
  // Redis INFO (memory, cpu) is read every this many backlog polls (1 s), by worker 0 only.
  static constexpr uint64_t kInfoEvery = 10;

  // `frontend_id` is unique per process incarnation (host:pid:random); the reply list is
  // "<stream>:reply:<frontend_id>:<worker>". `clock` times the wait estimator's polls.
  QueueFrontend(boost::asio::io_context& io, const QueueConfig& config,
                const std::string& frontend_id, uint32_t worker, ClusterStats& cluster_stats,
                QueueStats& stats, const Clock& clock = RealClock::instance());
  ~QueueFrontend() override;
  QueueFrontend(const QueueFrontend&) = delete;
  QueueFrontend& operator=(const QueueFrontend&) = delete;

  // Connects to Redis, creates the group if missing, starts the reply loop and the backlog
  // poll. Call on the worker's thread (or before it runs).
  void start();
  // Closes the connections; calls still waiting get UNAVAILABLE. Final.
  void stop();

  bool connected() const { return producer_->connected(); }
  std::size_t open_calls() const { return calls_.size(); }
  const std::string& reply_key() const { return inbox_->key(); }
  int64_t backlog() const { return backlog_; }
  const WaitEstimator& wait_estimator() const { return estimator_; }

  // UpstreamPort
  void assign(UpstreamClient& client) override;
  void reassign(UpstreamClient& client, const UpstreamLink& /*failed*/) override { assign(client); }
  ClusterStats& stats() override { return cluster_stats_; }
  std::optional<Duration> max_stream_duration() const override { return std::nullopt; }

  // UpstreamLink
  int32_t submit(const std::vector<nghttp2_nv>& headers, bool with_body,
                 h2::StreamEvents* events) override;
  void resume_request(int32_t stream_id) override;
  void consume_response(int32_t /*stream_id*/, std::size_t /*n*/) override {}
  void cancel(int32_t stream_id) override;
  void release(UpstreamClient& client) override;
  bool request_sent(int32_t stream_id) const override;

 private:
  enum class Phase {
    Receiving,  // collecting the request body
    Enqueuing,  // XADD in flight
    Waiting,    // enqueued; the inbox has its handler
    Answering,  // a reply is being played to the stream
  };
  struct Call {
    int32_t id = 0;
    UpstreamClient* client = nullptr;
    h2::StreamEvents* events = nullptr;
    Phase phase = Phase::Receiving;
    QueueEnvelope envelope;
    std::size_t parsed = 0;    // body bytes walked by the message counter
    uint32_t messages = 0;     // complete gRPC messages in the body so far
    bool pump_posted = false;  // a pump() is queued for this call
    TimePoint complete_at{};   // the request's end arrived
  };

  // Takes what the stream has of the request body; once it is complete, enqueues it.
  void pump(int32_t id);
  void post_pump(Call& call);
  void enqueue(Call& call);
  void on_reply(int32_t id, RedisResult<QueueReply> reply);
  // Plays `reply` to the stream as its upstream response (posted by the callers).
  void play(int32_t id, QueueReply reply);
  // A trailers-only answer made here.
  void answer_locally(Call& call, GrpcStatus status, std::string message,
                      std::optional<Duration> pushback = std::nullopt);
  void erase(int32_t id);
  Call* find(int32_t id);
  void poll_backlog();
  void on_group(const GroupBacklog& group);
  void set_backlog(int64_t backlog);
  // The estimated wait exceeds what `call` has left: refuses it (true) before XADD.
  bool refuse_for_wait(Call& call);
  void on_producer_state(RedisConnection::State state);
  void fail_waiting_for_connect();

  boost::asio::io_context& io_;
  const QueueConfig& config_;
  std::string frontend_id_;
  ClusterStats& cluster_stats_;
  QueueStats& stats_;
  std::shared_ptr<RedisConnection> producer_;  // XADD, XINFO, XGROUP
  RedisStreams streams_;
  std::shared_ptr<ReplyInbox> inbox_;  // its own (blocking) connection
  boost::asio::steady_timer poll_timer_;
  const bool publishes_;  // worker 0 sets the queue's polled gauges (one writer per gauge)
  uint64_t polls_ = 0;
  std::unordered_map<int32_t, Call> calls_;
  std::unordered_map<UpstreamClient*, int32_t> by_client_;  // submitted calls by their stream
  UpstreamClient* assigning_ = nullptr;                     // inside assign()
  // Streams admitted before the first connect finished; they go once it does.
  std::vector<UpstreamClient*> waiting_for_connect_;
  bool first_connect_done_ = false;  // the first connect attempt succeeded or failed
  int32_t next_id_ = 1;
  uint64_t next_call_ = 1;
  int64_t backlog_ = 0;
  WaitEstimator estimator_;
  bool stopped_ = false;
  h2::OutputQueue scratch_;  // body bytes on their way from a stream's BodyBuffer
  // Lives as long as the frontend: posted handlers check it before touching `this`.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice::queue
