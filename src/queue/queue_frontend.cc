#include "src/queue/queue_frontend.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstdio>

#include "src/h2/body_buffer.h"
#include "src/h2/stream_events.h"
#include "src/proxy/cluster_stats.h"
#include "src/proxy/grpc_util.h"

namespace sluice::queue {

namespace {

// Feeds one header block to a stream, as an HTTP/2 session would.
void play_block(h2::StreamEvents& events, const Metadata& fields, bool initial, bool end_stream) {
  events.on_headers_begin(initial);
  for (const auto& [name, value] : fields) events.on_header(name, value, false);
  events.on_headers_end(end_stream);
}

}  // namespace

QueueFrontend::QueueFrontend(boost::asio::io_context& io, const QueueConfig& config,
                             const std::string& frontend_id, uint32_t worker,
                             ClusterStats& cluster_stats, QueueStats& stats, const Clock& clock)
    : io_(io),
      config_(config),
      frontend_id_(frontend_id),
      cluster_stats_(cluster_stats),
      stats_(stats),
      producer_(RedisConnection::create(
          io,
          redis_options(config, "sluice-frontend:" + frontend_id + ":" + std::to_string(worker)))),
      streams_(producer_),
      poll_timer_(io),
      publishes_(worker == 0),
      estimator_(clock) {
  ReplyInbox::Options o;
  o.key = config.stream + ":reply:" + frontend_id + ":" + std::to_string(worker);
  o.undecodable_total = &stats.frontend_reply_decode_error_total;
  inbox_ = ReplyInbox::create(
      RedisConnection::create(
          io, redis_options(config, "sluice-inbox:" + frontend_id + ":" + std::to_string(worker))),
      std::move(o));
}

QueueFrontend::~QueueFrontend() {
  *alive_ = false;
  stop();
  stats_.frontend_rq_open.sub(static_cast<int64_t>(calls_.size()));
}

void QueueFrontend::start() {
  producer_->set_state_listener([this, alive = alive_](RedisConnection::State s) {
    if (*alive) on_producer_state(s);
  });
  producer_->start();
  inbox_->start();
  poll_backlog();
}

void QueueFrontend::stop() {
  if (stopped_) return;
  stopped_ = true;
  waiting_for_connect_.clear();  // shutdown: their streams go with their connections
  poll_timer_.cancel();
  producer_->set_state_listener(nullptr);
  producer_->close();
  inbox_->stop();  // waiting calls get ConnectionLost: answered UNAVAILABLE
}

void QueueFrontend::on_producer_state(RedisConnection::State state) {
  if (state == RedisConnection::State::WaitingToReconnect && !first_connect_done_) {
    first_connect_done_ = true;
    fail_waiting_for_connect();  // the first connect failed: Redis is down, say so now
    return;
  }
  if (state != RedisConnection::State::Connected) return;
  first_connect_done_ = true;
  // Start id "0": entries XADDed before any consumer made the group are read, not skipped.
  // After a Redis restart this makes the group again before the first XADD is answered.
  streams_.create_group(config_.stream, config_.group, "0", [this, alive = alive_](auto r) {
    if (!*alive) return;
    if (!r) {
      spdlog::warn("queue '{}': cannot create group '{}' on stream '{}': {}", config_.name,
                   config_.group, config_.stream, r.error().to_string());
    }
  });
  poll_backlog();
  // Calls that arrived while the first connect was under way go now (after the group: the
  // commands leave in order).
  std::vector<UpstreamClient*> waiting;
  waiting.swap(waiting_for_connect_);
  for (UpstreamClient* client : waiting) {
    assigning_ = client;
    client->on_upstream_ready();
    assigning_ = nullptr;
  }
}

void QueueFrontend::fail_waiting_for_connect() {
  std::vector<UpstreamClient*> waiting;
  waiting.swap(waiting_for_connect_);
  for (UpstreamClient* client : waiting) {
    cluster_stats_.upstream_rq_unavailable_total.inc();
    stats_.frontend_rq_enqueue_failed_total.inc();
    client->on_upstream_unavailable("queue '" + config_.name + "': Redis " + producer_->endpoint() +
                                    " unreachable (" + producer_->stats().last_error() +
                                    "); not enqueued");
  }
}

void QueueFrontend::poll_backlog() {
  if (stopped_) return;
  poll_timer_.cancel();
  if (producer_->connected()) {
    streams_.group_backlog(config_.stream, config_.group, [this, alive = alive_](auto r) {
      if (*alive && r) on_group(*r);
    });
  }
  if (publishes_ && producer_->connected() && ++polls_ % kInfoEvery == 0) {
    streams_.info({"memory", "cpu"}, [this, alive = alive_](RedisResult<RedisInfo> r) {
      if (!*alive || !r) return;
      if (auto m = r->number("used_memory"))
        stats_.redis_used_memory_bytes.set(static_cast<int64_t>(*m));
      const auto sys = r->number("used_cpu_sys");
      const auto user = r->number("used_cpu_user");
      if (sys && user) stats_.redis_cpu_seconds.set(*sys + *user);
    });
  }
  poll_timer_.expires_after(kBacklogPoll);
  poll_timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!ec && *alive) poll_backlog();
  });
}

void QueueFrontend::on_group(const GroupBacklog& group) {
  set_backlog(group.backlog);
  estimator_.observe(group.backlog, group.entries_read);
  if (!publishes_) return;
  stats_.pending.set(group.pending);
  stats_.consumers.set(group.consumers);
  if (group.length) stats_.stream_length.set(*group.length);
  stats_.drain_rate.set(estimator_.drain_rate().value_or(0.0));
  stats_.estimated_wait_ms.set(
      to_us(estimator_.estimate(group.backlog).value_or(Duration::zero())) / 1000);
}

void QueueFrontend::set_backlog(int64_t backlog) {
  backlog_ = backlog;
  if (publishes_) stats_.backlog.set(backlog);
}

// ---- UpstreamPort ----

void QueueFrontend::assign(UpstreamClient& client) {
  const RedisConnection::State state = producer_->state();
  if (!stopped_ && !first_connect_done_ &&
      (state == RedisConnection::State::Idle || state == RedisConnection::State::Connecting)) {
    // Just started: the first connect is under way (at most connect_timeout). Hold the call
    // as assigned, so that its stream releases us if it ends meanwhile.
    client.on_upstream_assigned(*this);
    waiting_for_connect_.push_back(&client);
    return;
  }
  if (stopped_ || !producer_->connected()) {
    cluster_stats_.upstream_rq_unavailable_total.inc();
    stats_.frontend_rq_enqueue_failed_total.inc();
    client.on_upstream_unavailable(
        "queue '" + config_.name + "': Redis " + producer_->endpoint() + " unreachable (" +
        (stopped_ ? std::string("stopping") : producer_->stats().last_error()) + "); not enqueued");
    return;
  }
  client.on_upstream_assigned(*this);
  // The stream submits from inside on_upstream_ready(): that is how submit() learns its client.
  assigning_ = &client;
  client.on_upstream_ready();
  assigning_ = nullptr;
}

// ---- UpstreamLink ----

int32_t QueueFrontend::submit(const std::vector<nghttp2_nv>& headers, bool with_body,
                              h2::StreamEvents* events) {
  const int32_t id = next_id_;
  next_id_ = next_id_ == INT32_MAX ? 1 : next_id_ + 1;
  Call& call = calls_[id];
  call.id = id;
  call.events = events;
  call.client = assigning_;
  if (call.client != nullptr) by_client_[call.client] = id;
  QueueEnvelope& e = call.envelope;
  e.call_id = std::to_string(next_call_++);
  e.reply_to = inbox_->key();
  e.frontend = frontend_id_;
  for (const nghttp2_nv& nv : headers) {
    const std::string_view name(reinterpret_cast<const char*>(nv.name), nv.namelen);
    const std::string_view value(reinterpret_cast<const char*>(nv.value), nv.valuelen);
    if (name == "grpc-timeout") {
      // What the stream forwards is the time its caller has left: an absolute wall-clock
      // deadline crosses machines, a relative timeout would grow by the queue wait.
      if (const auto left = parse_grpc_timeout(value)) {
        // The stream measured `left` at LoopTime::now(), which inside a read batch is the
        // batch's start: anchor the wall clock there too, or the service would get the
        // batch's age on top of what the caller has.
        const Duration age = SteadyClock::now() - LoopTime::now();
        e.deadline_unix_ms = unix_ms_now() + std::max<int64_t>(1, to_us(*left - age) / 1000);
      }
      continue;
    }
    if (name == ":path") e.method = std::string(value);
    e.metadata.emplace_back(name, value);
  }
  stats_.frontend_rq_open.add(1);
  if (!with_body) call.complete_at = SteadyClock::now();
  post_pump(call);
  return id;
}

void QueueFrontend::resume_request(int32_t stream_id) {
  if (Call* call = find(stream_id)) post_pump(*call);
}

void QueueFrontend::cancel(int32_t stream_id) {
  Call* call = find(stream_id);
  if (call == nullptr) return;
  if (call->phase == Phase::Waiting || call->phase == Phase::Enqueuing) {
    // The stream's deadline (or its client) ended the call: the entry may still be run; its
    // reply will find nobody and be dropped (ReplyInbox counts it).
    const int64_t deadline = call->envelope.deadline_unix_ms;
    const bool expired = deadline != 0 && unix_ms_now() + 1 >= deadline;
    (expired ? stats_.frontend_rq_timeout_total : stats_.frontend_rq_cancelled_total).inc();
  }
  inbox_->forget(call->envelope.call_id);
  erase(stream_id);
}

void QueueFrontend::release(UpstreamClient& client) {
  waiting_for_connect_.erase(
      std::remove(waiting_for_connect_.begin(), waiting_for_connect_.end(), &client),
      waiting_for_connect_.end());
  auto it = by_client_.find(&client);
  if (it == by_client_.end()) return;
  const int32_t id = it->second;
  if (Call* call = find(id)) inbox_->forget(call->envelope.call_id);
  erase(id);
}

bool QueueFrontend::request_sent(int32_t stream_id) const {
  auto it = calls_.find(stream_id);
  return it != calls_.end() && it->second.phase != Phase::Receiving;
}

// ---- The call ----

QueueFrontend::Call* QueueFrontend::find(int32_t id) {
  auto it = calls_.find(id);
  return it == calls_.end() ? nullptr : &it->second;
}

void QueueFrontend::erase(int32_t id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  if (it->second.client != nullptr) by_client_.erase(it->second.client);
  calls_.erase(it);
  stats_.frontend_rq_open.sub(1);
}

void QueueFrontend::post_pump(Call& call) {
  if (call.pump_posted || call.phase != Phase::Receiving) return;
  call.pump_posted = true;
  boost::asio::post(io_, [this, alive = alive_, id = call.id] {
    if (*alive) pump(id);
  });
}

void QueueFrontend::pump(int32_t id) {
  Call* call = find(id);
  if (call == nullptr) return;
  call->pump_posted = false;
  if (call->phase != Phase::Receiving) return;
  h2::BodyBuffer* body = call->events->outgoing();
  std::string& bytes = call->envelope.body;
  if (body != nullptr && !body->empty()) {
    const std::size_t n = body->take(body->size(), scratch_);
    scratch_.for_each_front(SIZE_MAX, [&](const uint8_t* data, std::size_t length) {
      bytes.append(reinterpret_cast<const char*>(data), length);
    });
    scratch_.consume(scratch_.size());
    call->events->on_outgoing_sent(n);  // the client's credit for these bytes goes back
  }
  // Count complete length-prefixed messages: a unary call sends exactly one.
  while (bytes.size() >= call->parsed + 5) {
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data() + call->parsed);
    const uint64_t length =
        (uint64_t{p[1]} << 24) | (uint64_t{p[2]} << 16) | (uint64_t{p[3]} << 8) | uint64_t{p[4]};
    if (bytes.size() < call->parsed + 5 + length) break;
    call->parsed += 5 + length;
    ++call->messages;
  }
  if (call->messages > 1) {
    stats_.frontend_rq_unimplemented_total.inc();
    answer_locally(*call, GrpcStatus::Unimplemented,
                   "queue mode carries unary calls only: this call sent more than one request "
                   "message (client or bidirectional streaming); call the service directly");
    return;
  }
  if (bytes.size() > kMaxBody) {
    stats_.frontend_rq_too_large_total.inc();
    answer_locally(*call, GrpcStatus::ResourceExhausted,
                   "request body larger than " + std::to_string(kMaxBody) +
                       " bytes; queue mode does not carry it");
    return;
  }
  const bool complete = body == nullptr || body->finished();
  if (!complete) return;
  if (call->complete_at == TimePoint{}) call->complete_at = SteadyClock::now();
  enqueue(*call);
}

void QueueFrontend::enqueue(Call& call) {
  if (backlog_ >= static_cast<int64_t>(config_.max_pending)) {
    stats_.frontend_rq_backpressure_total.inc();
    answer_locally(call, GrpcStatus::ResourceExhausted,
                   "queue '" + config_.name + "' backlog " + std::to_string(backlog_) +
                       " >= max_pending " + std::to_string(config_.max_pending) + "; not enqueued",
                   kBacklogPushback);
    return;
  }
  if (refuse_for_wait(call)) return;
  call.phase = Phase::Enqueuing;
  call.envelope.enqueued_unix_ms = unix_ms_now();
  const int32_t id = call.id;
  const std::string call_id = call.envelope.call_id;
  // Registered before the XADD, so that a reply faster than XADD's own answer is not missed.
  inbox_->expect(call_id, [this, alive = alive_, id](RedisResult<QueueReply> r) {
    if (*alive) on_reply(id, std::move(r));
  });
  streams_.xadd(
      config_.stream, call.envelope.encode(), std::nullopt,
      [this, alive = alive_, id, call_id](const RedisResult<std::string>& r) {
        if (!*alive) return;
        Call* c = find(id);
        if (c == nullptr || c->envelope.call_id != call_id) return;
        if (r) {
          if (c->phase == Phase::Enqueuing) c->phase = Phase::Waiting;
          ++backlog_;  // until the next poll says otherwise
          return;
        }
        if (c->phase != Phase::Enqueuing) return;  // answered meanwhile
        inbox_->forget(call_id);
        stats_.frontend_rq_enqueue_failed_total.inc();
        const RedisError& error = r.error();
        answer_locally(
            *c, GrpcStatus::Unavailable,
            "queue '" + config_.name + "': enqueue failed (" + error.to_string() +
                (error.never_sent() ? "); not enqueued" : "); it may have been enqueued"));
      });
}

bool QueueFrontend::refuse_for_wait(Call& call) {
  const int64_t deadline = call.envelope.deadline_unix_ms;
  if (!config_.shed_by_estimated_wait || deadline == 0 || backlog_ <= 0) return false;
  const std::optional<Duration> wait = estimator_.estimate(backlog_);
  if (!wait) return false;  // no evidence of the consumers' capacity yet: never shed on a guess
  const Duration left = std::chrono::milliseconds(deadline - unix_ms_now());
  if (*wait <= left) return false;
  stats_.frontend_rq_backpressure_total.inc();
  stats_.frontend_rq_backpressure_wait_total.inc();
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1f", estimator_.drain_rate().value_or(0.0));
  answer_locally(call, GrpcStatus::ResourceExhausted,
                 "queue '" + config_.name + "': estimated wait " +
                     std::to_string(to_us(*wait) / 1000) + " ms (backlog " +
                     std::to_string(backlog_) + " at " + rate +
                     "/s) exceeds the call's remaining deadline " +
                     std::to_string(std::max<int64_t>(0, to_us(left) / 1000)) + " ms; not enqueued",
                 std::clamp<Duration>(*wait - left, kWaitPushbackMin, kWaitPushbackMax));
  return true;
}

void QueueFrontend::on_reply(int32_t id, RedisResult<QueueReply> reply) {
  Call* call = find(id);
  if (call == nullptr) return;
  if (!reply) {
    stats_.frontend_rq_result_error_total.inc();
    answer_locally(*call, GrpcStatus::Unavailable,
                   "queue '" + config_.name + "': the reply was lost (" +
                       reply.error().to_string() + "); the call may have run");
    return;
  }
  stats_.frontend_rq_ok_total.inc();
  stats_.frontend_rq_time_us.record(
      static_cast<uint64_t>(std::max<int64_t>(0, to_us(SteadyClock::now() - call->complete_at))));
  call->phase = Phase::Answering;
  boost::asio::post(io_, [this, alive = alive_, id, r = std::move(*reply)]() mutable {
    if (*alive) play(id, std::move(r));
  });
}

void QueueFrontend::answer_locally(Call& call, GrpcStatus status, std::string message,
                                   std::optional<Duration> pushback) {
  if (call.phase == Phase::Answering) return;
  call.phase = Phase::Answering;
  QueueReply reply;
  reply.call_id = call.envelope.call_id;
  reply.grpc_status = to_int(status);
  reply.grpc_message = std::move(message);
  if (pushback) {
    reply.trailers.emplace_back("grpc-retry-pushback-ms", std::to_string(to_us(*pushback) / 1000));
  }
  boost::asio::post(io_, [this, alive = alive_, id = call.id, r = std::move(reply)]() mutable {
    if (*alive) play(id, std::move(r));
  });
}

void QueueFrontend::play(int32_t id, QueueReply reply) {
  Call* call = find(id);
  if (call == nullptr) return;
  h2::StreamEvents* events = call->events;
  // The stream may end (and release us) at any step: look the call up again after each.
  if (reply.headers.empty()) {
    // A reply made without the service (by us or by a consumer): trailers-only.
    Metadata fields = {{":status", "200"},
                       {"content-type", "application/grpc"},
                       {"grpc-status", std::to_string(reply.grpc_status)}};
    if (!reply.grpc_message.empty()) {
      fields.emplace_back("grpc-message", percent_encode_grpc_message(reply.grpc_message));
    }
    for (auto& t : reply.trailers) {
      if (t.first != "grpc-status" && t.first != "grpc-message") fields.push_back(std::move(t));
    }
    play_block(*events, fields, true, true);
  } else {
    const bool trailers = !reply.trailers.empty();
    const bool body = !reply.body.empty();
    play_block(*events, reply.headers, true, !body && !trailers);
    if (find(id) == nullptr) return;
    if (body) {
      events->on_data(reinterpret_cast<const uint8_t*>(reply.body.data()), reply.body.size());
      if (find(id) == nullptr) return;
    }
    if (trailers) {
      play_block(*events, reply.trailers, false, true);
    } else if (body) {
      events->on_data_end();
    }
  }
  if (find(id) == nullptr) return;
  events->on_close(0);  // the stream releases us from here: `call` is gone after it
  erase(id);
}

}  // namespace sluice::queue
