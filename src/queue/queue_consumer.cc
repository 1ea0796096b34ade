#include "src/queue/queue_consumer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>

#include "filters/filter.h"
#include "filters/limiter_snapshot.h"

namespace sluice::queue {

namespace {

StatName consumer_stat(const std::string& consumer, const std::string& leaf) {
  return StatName{"consumer", {{"consumer", consumer}}, leaf};
}

std::string field(const StreamFields& fields, std::string_view name) {
  for (const auto& [n, v] : fields) {
    if (n == name) return v;
  }
  return {};
}

}  // namespace

ConsumerStats::ConsumerStats(StatsRegistry& r, const std::string& c)
    :
#define SLUICE_INIT(name, help) name(r.counter(consumer_stat(c, #name), help)),
      SLUICE_QUEUE_CONSUMER_COUNTERS(SLUICE_INIT)
#undef SLUICE_INIT
#define SLUICE_INIT(name, help) name(r.gauge(consumer_stat(c, #name), help)),
          SLUICE_QUEUE_CONSUMER_GAUGES(SLUICE_INIT)
#undef SLUICE_INIT
              consumer_rq_time_us(r.histogram(consumer_stat(c, "consumer_rq_time_us"),
                                              "Entry read to reply pushed", "us")) {
  for (std::size_t i = 0; i < completed_by_grpc_status.size(); ++i) {
    const std::string leaf =
        i <= 16 ? "consumer_rq_completed_grpc_status_" + std::to_string(i) + "_total"
                : std::string("consumer_rq_completed_grpc_status_invalid_total");
    completed_by_grpc_status[i] = &r.counter(
        consumer_stat(c, leaf), i <= 16 ? "Calls completed with grpc-status " + std::to_string(i)
                                        : std::string("Calls completed without a valid status"));
  }
}

QueueConsumer::QueueConsumer(boost::asio::io_context& io, Dispatcher& dispatcher,
                             const QueueConfig& queue, const ConsumerConfig& config,
                             std::string name, std::shared_ptr<const FilterChain> chain,
                             UpstreamPort& port, ConsumerStats& stats)
    : io_(io),
      dispatcher_(dispatcher),
      queue_(queue),
      config_(config),
      name_(std::move(name)),
      chain_(std::move(chain)),
      port_(port),
      stats_(stats),
      reader_conn_(RedisConnection::create(io, redis_options(queue, "sluice-reader:" + name_))),
      command_conn_(RedisConnection::create(io, redis_options(queue, "sluice-consumer:" + name_))),
      reader_(reader_conn_),
      commands_(command_conn_),
      read_timer_(io),
      maintain_timer_(io) {}

QueueConsumer::~QueueConsumer() {
  *alive_ = false;
  stop();
}

void QueueConsumer::start() {
  command_conn_->set_state_listener([this, alive = alive_](RedisConnection::State s) {
    if (*alive && s == RedisConnection::State::Connected) ensure_group();
  });
  reader_conn_->set_state_listener([this, alive = alive_](RedisConnection::State s) {
    if (*alive && s == RedisConnection::State::Connected) read_later(Duration::zero());
  });
  command_conn_->start();
  reader_conn_->start();
  maintain_timer_.expires_after(std::max<Duration>(queue_.claim_after / 3, kRetryAfterError));
  maintain_timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!ec && *alive) maintain();
  });
}

void QueueConsumer::stop() {
  if (stopped_) return;
  stopped_ = true;
  read_timer_.cancel();
  maintain_timer_.cancel();
  reader_conn_->set_state_listener(nullptr);
  command_conn_->set_state_listener(nullptr);
  reader_conn_->close();
  command_conn_->close();
  stats_.consumer_rq_active.sub(static_cast<int64_t>(calls_.size()));
  calls_.clear();  // their entries stay pending: another consumer takes them over
}

void QueueConsumer::drain(std::function<void()> done) {
  draining_ = true;
  drained_ = std::move(done);
  read_timer_.cancel();
  check_drained();
}

void QueueConsumer::check_drained() {
  // A read in flight may still bring entries delivered to us: they are run, not left pending
  // for claim_after.
  if (!draining_ || !drained_ || reading_ || !calls_.empty() || replies_in_flight_ > 0) return;
  auto done = std::move(drained_);
  drained_ = nullptr;
  // Leave the group, so that it does not list every consumer that ever ran: only when nothing
  // is pending under our name (XGROUP DELCONSUMER drops the consumer's pending entries, and an
  // entry whose reply could not be pushed must stay for another consumer to run).
  RedisStreams::PendingQuery q;
  q.count = 1;
  q.consumer = name_;
  commands_.xpending(
      queue_.stream, queue_.group, q,
      [this, alive = alive_, done = std::move(done)](RedisResult<std::vector<PendingEntry>> r) {
        if (!*alive) return;
        if (!r || !r->empty()) {
          boost::asio::post(io_, done);
          return;
        }
        RedisCommand del("XGROUP");
        del.arg("DELCONSUMER").arg(queue_.stream).arg(queue_.group).arg(name_);
        command_conn_->send(del, [this, alive, done](const RedisResult<RespValue>&) {
          if (*alive) boost::asio::post(io_, done);
        });
      });
}

void QueueConsumer::ensure_group() {
  // Start id "0": entries XADDed before the group existed (or after a Redis restart lost it)
  // are read, not skipped.
  commands_.create_group(queue_.stream, queue_.group, "0", [this, alive = alive_](auto r) {
    if (!*alive) return;
    if (!r) {
      spdlog::warn("consumer '{}': cannot create group '{}' on '{}': {}", config_.name,
                   queue_.group, queue_.stream, r.error().to_string());
    }
  });
}

uint32_t QueueConsumer::window() const {
  std::optional<int64_t> free;
  if (chain_) {
    for (std::size_t i = 0; i < chain_->size(); ++i) {
      const auto snap = chain_->factory(i).snapshot();
      if (!snap) continue;
      const int64_t f = static_cast<int64_t>(snap->limit) - snap->in_flight - snap->queued;
      free = free ? std::min(*free, f) : f;
    }
  }
  // Every entry in hand already counts at its limiters (admitted: in flight; waiting: queued),
  // since its chain starts when it is read.
  const int64_t w =
      free ? *free : static_cast<int64_t>(kNoLimiterWindow) - static_cast<int64_t>(calls_.size());
  return static_cast<uint32_t>(std::max<int64_t>(0, w));
}

void QueueConsumer::read_later(Duration after) {
  if (stopped_ || draining_ || read_scheduled_ || reading_) return;
  read_scheduled_ = true;
  read_timer_.expires_after(after);
  read_timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!*alive) return;
    read_scheduled_ = false;
    if (!ec) read();
  });
}

void QueueConsumer::read() {
  if (stopped_ || draining_ || reading_ || !reader_conn_->connected()) return;
  const uint32_t free = window();
  stats_.consumer_window.set(free);
  if (free == 0) {
    check_demand();
    return;  // a call that ends reads again (on_call_done)
  }
  RedisStreams::ReadGroupArgs a;
  a.stream = queue_.stream;
  a.group = queue_.group;
  a.consumer = name_;
  a.count = free;
  a.block = kBlock;
  reading_ = true;
  reader_.xreadgroup(a, [this, alive = alive_](RedisResult<std::vector<StreamEntry>> r) {
    if (!*alive) return;
    reading_ = false;
    if (!r) {
      stats_.consumer_read_error_total.inc();
      if (r.error().is_server("NOGROUP")) ensure_group();  // Redis restarted without data
      read_later(kRetryAfterError);
      check_drained();
      return;
    }
    on_entries(std::move(*r), false);
    read_later(Duration::zero());
    check_drained();
  });
}

void QueueConsumer::check_demand() {
  if (!chain_ || demand_check_in_flight_ || stopped_ || draining_ || !reader_conn_->connected()) {
    return;
  }
  const TimePoint now = dispatcher_.now();
  if (now < next_demand_check_) return;
  next_demand_check_ = now + kDemandPoll;
  demand_check_in_flight_ = true;
  // On the reader's connection, idle while the window is full: replies and acknowledgements on
  // the command connection do not wait behind it.
  reader_.group_backlog(queue_.stream, queue_.group,
                        [this, alive = alive_](RedisResult<GroupBacklog> r) {
                          if (!*alive) return;
                          demand_check_in_flight_ = false;
                          // Still full: a window that opened meanwhile reads those entries
                          // instead.
                          if (!r || r->backlog <= 0 || window() > 0) return;
                          stats_.consumer_demand_pressure_total.inc();
                          for (std::size_t i = 0; i < chain_->size(); ++i)
                            chain_->factory(i).on_demand_pressure();
                        });
}

void QueueConsumer::on_entries(std::vector<StreamEntry> entries, bool claimed) {
  for (StreamEntry& e : entries) {
    if (e.deleted || calls_.count(e.id) > 0) continue;
    stats_.consumer_rq_total.inc();
    if (claimed) stats_.consumer_rq_claimed_total.inc();
    handle(std::move(e));
  }
}

void QueueConsumer::handle(StreamEntry entry) {
  auto decoded = QueueEnvelope::decode(entry.fields);
  const std::string reply_to = field(entry.fields, "reply_to");
  if (!decoded) {
    dead_letter(entry, reply_to, field(entry.fields, "call_id"),
                "undecodable: " + decoded.error().message);
    return;
  }
  QueueEnvelope envelope = std::move(*decoded);
  const std::optional<int64_t> left = envelope.remaining_ms(unix_ms_now());
  if (left && *left <= 0) {
    // Its caller has given up (or is about to): do not spend the service on it.
    stats_.consumer_rq_expired_total.inc();
    QueueReply reply;
    reply.call_id = envelope.call_id;
    reply.consumer = name_;
    reply.grpc_status = to_int(GrpcStatus::DeadlineExceeded);
    reply.grpc_message = "deadline exceeded while queued (" + std::to_string(-*left) +
                         " ms before a consumer took it)";
    reply_and_ack(entry.id, envelope.reply_to, reply);
    return;
  }
  std::optional<TimePoint> deadline;
  if (left) deadline = dispatcher_.now() + std::chrono::milliseconds(*left);
  const std::string id = entry.id;
  InHand& h = calls_[id];
  h.entry = std::move(entry);
  h.reply_to = envelope.reply_to;
  h.read_at = dispatcher_.now();
  stats_.consumer_rq_active.add(1);
  h.call = std::make_unique<ConsumerCall>(std::move(envelope), chain_.get(), port_, dispatcher_,
                                          deadline, [this, alive = alive_, id](QueueReply reply) {
                                            if (*alive) on_call_done(id, std::move(reply));
                                          });
  h.call->start();
}

void QueueConsumer::on_call_done(const std::string& entry_id, QueueReply reply) {
  auto it = calls_.find(entry_id);
  if (it == calls_.end()) return;
  reply.consumer = name_;
  const std::string reply_to = it->second.reply_to;
  stats_.consumer_rq_time_us.record(
      static_cast<uint64_t>(std::max<int64_t>(0, to_us(dispatcher_.now() - it->second.read_at))));
  calls_.erase(it);  // the call is finished: its permit went back with its chain
  stats_.consumer_rq_active.sub(1);
  stats_.consumer_rq_completed_total.inc();
  stats_.count_completed(reply.grpc_status);
  reply_and_ack(entry_id, reply_to, reply);
  read_later(Duration::zero());
}

void QueueConsumer::reply_and_ack(const std::string& entry_id, const std::string& reply_to,
                                  const QueueReply& reply) {
  ++replies_in_flight_;
  push_reply(entry_id, reply_to, std::make_shared<std::string>(reply.encode()), 0);
}

void QueueConsumer::push_reply(const std::string& entry_id, const std::string& reply_to,
                               const std::shared_ptr<std::string>& bytes, uint32_t attempt) {
  // Reply first, then acknowledge: a crash between the two runs the call again (at-least-once),
  // the other order could lose the reply.
  commands_.push_reply(
      reply_to, *bytes, queue_.reply_ttl,
      [this, alive = alive_, entry_id, reply_to, bytes, attempt](const RedisResult<int64_t>& r) {
        if (!*alive) return;
        if (!r) {
          stats_.consumer_reply_failed_total.inc();
          // Redis is away (restarting, a network blip): the reply is in hand, so push it again
          // once the connection is back rather than run the call again. After kReplyRetries
          // the entry is left pending (another consumer, or this one's maintain(), runs it
          // again after claim_after).
          if (attempt + 1 < kReplyRetries && !stopped_) {
            auto timer = std::make_shared<boost::asio::steady_timer>(io_, kRetryAfterError);
            timer->async_wait([this, alive, entry_id, reply_to, bytes, attempt,
                               timer](const boost::system::error_code& ec) {
              if (!*alive || ec) return;
              push_reply(entry_id, reply_to, bytes, attempt + 1);
            });
            return;
          }
          --replies_in_flight_;
          check_drained();
          return;
        }
        commands_.ack_and_delete(queue_.stream, queue_.group, {entry_id},
                                 [this, alive](const RedisResult<int64_t>&) {
                                   if (!*alive) return;
                                   --replies_in_flight_;
                                   check_drained();
                                 });
      });
}

void QueueConsumer::dead_letter(const StreamEntry& entry, const std::string& reply_to,
                                const std::string& call_id, const std::string& reason) {
  stats_.consumer_rq_dead_lettered_total.inc();
  ++replies_in_flight_;
  commands_.dead_letter(
      queue_.stream, queue_.group, queue_.stream + ":dead", entry, reason, std::nullopt,
      [this, alive = alive_, reply_to, call_id, reason](const RedisResult<std::string>& r) {
        if (!*alive) return;
        --replies_in_flight_;
        if (r && !reply_to.empty() && !call_id.empty()) {
          QueueReply reply;
          reply.call_id = call_id;
          reply.consumer = name_;
          reply.grpc_status = to_int(GrpcStatus::Unavailable);
          reply.grpc_message = "queue '" + queue_.name + "': entry dead-lettered (" + reason + ")";
          ++replies_in_flight_;
          commands_.push_reply(reply_to, reply.encode(), queue_.reply_ttl,
                               [this, alive](const RedisResult<int64_t>&) {
                                 if (!*alive) return;
                                 --replies_in_flight_;
                                 check_drained();
                               });
        }
        check_drained();
      });
}

void QueueConsumer::maintain() {
  if (stopped_) return;
  if (command_conn_->connected()) {
    // Our own entries in hand: reset their idle time so nobody takes over a long call.
    std::vector<std::string> mine;
    for (const auto& [id, h] : calls_) mine.push_back(id);
    if (!mine.empty()) {
      commands_.xclaim_justid(queue_.stream, queue_.group, name_, Duration::zero(), mine,
                              [](auto) {});
    }
    // Entries of dead consumers. Count: what we could start now (never prefetch).
    const uint32_t free = draining_ ? 0 : window();
    if (free > 0) {
      RedisStreams::PendingQuery q;
      q.min_idle = queue_.claim_after;
      q.count = free;
      commands_.xpending(
          queue_.stream, queue_.group, q,
          [this, alive = alive_](RedisResult<std::vector<PendingEntry>> pending) {
            if (!*alive || !pending || pending->empty()) return;
            std::vector<std::string> ids;
            std::map<std::string, int64_t> deliveries;
            for (const PendingEntry& p : *pending) {
              // Ours and in hand: running. Ours and not in hand: an orphan (its reply could not
              // be pushed): run it again like anyone's.
              if (p.consumer == name_ && calls_.count(p.id) > 0) continue;
              ids.push_back(p.id);
              deliveries[p.id] = p.deliveries;
            }
            if (ids.empty()) return;
            // XCLAIM (not JUSTID) counts a delivery: what max_deliveries is measured by.
            commands_.xclaim(
                queue_.stream, queue_.group, name_, queue_.claim_after, ids,
                [this, alive, deliveries](RedisResult<std::vector<StreamEntry>> r) {
                  if (!*alive || !r) return;
                  std::vector<StreamEntry> run;
                  for (StreamEntry& e : *r) {
                    auto d = deliveries.find(e.id);
                    const int64_t n = (d == deliveries.end() ? 0 : d->second) + 1;
                    if (n > static_cast<int64_t>(queue_.max_deliveries)) {
                      dead_letter(e, field(e.fields, "reply_to"), field(e.fields, "call_id"),
                                  "delivered " + std::to_string(n) + " times (max_deliveries " +
                                      std::to_string(queue_.max_deliveries) + ")");
                    } else {
                      run.push_back(std::move(e));
                    }
                  }
                  on_entries(std::move(run), true);
                });
          });
    }
  }
  maintain_timer_.expires_after(std::max<Duration>(queue_.claim_after / 3, kRetryAfterError));
  maintain_timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!ec && *alive) maintain();
  });
}

}  // namespace sluice::queue
