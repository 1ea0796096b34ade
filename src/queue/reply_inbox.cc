#include "src/queue/reply_inbox.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

namespace sluice::queue {

std::shared_ptr<ReplyInbox> ReplyInbox::create(std::shared_ptr<RedisConnection> connection,
                                               Options options) {
  return std::make_shared<ReplyInbox>(Passkey{}, std::move(connection), std::move(options));
}

ReplyInbox::ReplyInbox(Passkey, std::shared_ptr<RedisConnection> connection, Options options)
    : connection_(connection),
      streams_(std::move(connection)),
      options_(std::move(options)),
      retry_timer_(connection_->io()) {}

void ReplyInbox::start() {
  if (running_) return;
  running_ = true;
  std::weak_ptr<ReplyInbox> weak = weak_from_this();
  connection_->set_state_listener([weak](RedisConnection::State s) {
    if (auto self = weak.lock()) self->on_state(s);
  });
  if (connection_->state() == RedisConnection::State::Idle) {
    connection_->start();  // Connected arrives through the listener
  } else if (connection_->connected()) {
    check_restart();
    pop();
  }
}

void ReplyInbox::stop() {
  if (!running_) return;
  running_ = false;
  retry_timer_.cancel();
  connection_->set_state_listener(nullptr);
  connection_->close();
  // Posted, like RedisConnection's callbacks: a handler never runs inside a call into us.
  std::unordered_map<std::string, Handler> failed;
  failed.swap(waiting_);
  stats_.waiting.store(0, std::memory_order_relaxed);
  for (auto& [id, handler] : failed) {
    boost::asio::post(connection_->io(), [handler = std::move(handler)] {
      handler(RedisError{RedisErrorKind::ConnectionLost, "reply inbox stopped"});
    });
  }
}

bool ReplyInbox::expect(const std::string& call_id, Handler handler) {
  const bool added = waiting_.emplace(call_id, std::move(handler)).second;
  if (added) stats_.waiting.fetch_add(1, std::memory_order_relaxed);
  return added;
}

bool ReplyInbox::forget(const std::string& call_id) {
  const bool erased = waiting_.erase(call_id) > 0;
  if (erased) stats_.waiting.fetch_sub(1, std::memory_order_relaxed);
  return erased;
}

void ReplyInbox::on_state(RedisConnection::State state) {
  if (!running_) return;
  if (state == RedisConnection::State::Connected) {
    check_restart();
    pop();
  }
}

void ReplyInbox::check_restart() {
  std::weak_ptr<ReplyInbox> weak = weak_from_this();
  // Pipelined before the BLPOP: its reply arrives first, so waiting calls are failed before
  // any reply from the restarted Redis is delivered.
  streams_.info({"server"}, [weak](RedisResult<RedisInfo> r) {
    auto self = weak.lock();
    if (!self || !self->running_ || !r) return;
    const std::string run_id(r->get("run_id").value_or(""));
    if (!self->run_id_.empty() && run_id != self->run_id_) {
      self->stats_.restarts.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn("reply inbox {}: Redis restarted (run_id changed) with {} calls waiting{}",
                   self->options_.key, self->waiting_.size(),
                   self->options_.fail_waiting_on_restart ? ": failing them" : "");
      if (self->options_.fail_waiting_on_restart) {
        self->fail_all(RedisError{RedisErrorKind::ConnectionLost,
                                  "Redis restarted: queued calls and replies were lost"});
      }
    }
    self->run_id_ = run_id;
  });
}

void ReplyInbox::pop() {
  if (!running_ || reading_ || !connection_->connected()) return;
  reading_ = true;
  std::weak_ptr<ReplyInbox> weak = weak_from_this();
  streams_.blpop(options_.key, options_.block, [weak](RedisResult<std::optional<PoppedValue>> r) {
    auto self = weak.lock();
    if (!self) return;
    self->reading_ = false;
    if (!self->running_) return;
    if (!r) {
      // Connection errors: on_state(Connected) resumes. Redis errors: retry.
      if (r.error().kind == RedisErrorKind::Server || r.error().kind == RedisErrorKind::BadReply) {
        spdlog::warn("reply inbox {}: {}", self->options_.key, r.error().to_string());
        self->retry_later();
      } else {
        self->pop();  // no-op unless still connected
      }
      return;
    }
    if (!r->has_value()) {
      self->pop();  // timed out empty: next round
      return;
    }
    self->deliver((*r)->value);
    if (self->running_) self->drain();
  });
}

void ReplyInbox::drain() {
  if (!running_ || reading_ || !connection_->connected()) return;
  reading_ = true;
  std::weak_ptr<ReplyInbox> weak = weak_from_this();
  streams_.lpop(options_.key, options_.drain_batch,
                [weak](RedisResult<std::vector<std::string>> r) {
                  auto self = weak.lock();
                  if (!self) return;
                  self->reading_ = false;
                  if (!self->running_) return;
                  if (!r) {
                    self->pop();
                    return;
                  }
                  for (const std::string& bytes : *r) {
                    self->deliver(bytes);
                    if (!self->running_) return;
                  }
                  // A full batch: more may be there, so LPOP again without blocking.
                  if (r->size() == self->options_.drain_batch) {
                    self->drain();
                  } else {
                    self->pop();
                  }
                });
}

void ReplyInbox::retry_later() {
  retry_timer_.expires_after(options_.retry_after_error);
  std::weak_ptr<ReplyInbox> weak = weak_from_this();
  retry_timer_.async_wait([weak](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (!ec && self) self->pop();
  });
}

void ReplyInbox::deliver(const std::string& bytes) {
  auto reply = QueueReply::decode(bytes);
  if (!reply) {
    stats_.undecodable.fetch_add(1, std::memory_order_relaxed);
    if (options_.undecodable_total != nullptr) options_.undecodable_total->inc();
    spdlog::debug("reply inbox {}: dropped an undecodable reply: {}", options_.key,
                  reply.error().message);
    return;
  }
  const auto it = waiting_.find(reply->call_id);
  if (it == waiting_.end()) {
    stats_.unmatched.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Out of the map before the handler runs: it may expect() or forget() other calls.
  Handler handler = std::move(it->second);
  waiting_.erase(it);
  stats_.waiting.fetch_sub(1, std::memory_order_relaxed);
  stats_.delivered.fetch_add(1, std::memory_order_relaxed);
  handler(std::move(*reply));
}

void ReplyInbox::fail_all(const RedisError& error) {
  std::unordered_map<std::string, Handler> failed;
  failed.swap(waiting_);
  stats_.waiting.fetch_sub(static_cast<int64_t>(failed.size()), std::memory_order_relaxed);
  for (auto& [id, handler] : failed) handler(error);
}

}  // namespace sluice::queue
