#include "src/queue/redis_connection.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace sluice::queue {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kReadBufferBytes = std::size_t{64} * 1024;

// Replies go into log lines; a large one is cut.
std::string shorten(std::string s) {
  constexpr std::size_t kMax = 200;
  if (s.size() > kMax) {
    s.resize(kMax);
    s += "...";
  }
  return s;
}

}  // namespace

std::string RedisConnection::Stats::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

void RedisConnection::Stats::set_last_error(std::string error) {
  std::lock_guard<std::mutex> lock(mu_);
  last_error_ = std::move(error);
}

std::shared_ptr<RedisConnection> RedisConnection::create(asio::io_context& io, Options options) {
  return std::make_shared<RedisConnection>(Passkey{}, io, std::move(options));
}

RedisConnection::RedisConnection(Passkey, asio::io_context& io, Options options)
    : io_(io),
      options_(std::move(options)),
      endpoint_(options_.host + ":" + std::to_string(options_.port)),
      resolver_(io),
      socket_(io),
      connect_timer_(io),
      retry_timer_(io),
      deadline_timer_(io),
      parser_(options_.limits),
      read_buf_(kReadBufferBytes),
      rng_(std::random_device{}()) {}

RedisConnection::~RedisConnection() {
  // Handlers hold only weak references, so nothing of ours runs after this; the callbacks of
  // commands in flight still complete, on the io_context.
  for (Pending& p : pending_) {
    if (p.cb) {
      asio::post(io_, [cb = std::move(p.cb)] {
        cb(RedisError{RedisErrorKind::ConnectionLost, "connection destroyed"});
      });
    }
  }
}

const char* redis_state_name(RedisConnection::State state) {
  switch (state) {
    case RedisConnection::State::Idle:
      return "idle";
    case RedisConnection::State::Connecting:
      return "connecting";
    case RedisConnection::State::Connected:
      return "connected";
    case RedisConnection::State::WaitingToReconnect:
      return "waiting to reconnect";
    case RedisConnection::State::Closed:
      return "closed";
  }
  return "?";
}

void RedisConnection::set_state(State s) {
  if (state_ == s) return;
  state_ = s;
  stats_.connected.store(s == State::Connected, std::memory_order_relaxed);
  if (listener_) {
    // A copy: the listener may replace itself.
    const StateListener listener = listener_;
    listener(s);
  }
}

void RedisConnection::start() {
  if (state_ != State::Idle) return;
  connect_now();
}

void RedisConnection::connect_now() {
  const uint64_t gen = ++generation_;
  set_state(State::Connecting);
  if (state_ != State::Connecting) return;  // the listener closed us
  std::weak_ptr<RedisConnection> weak = weak_from_this();

  connect_timer_.expires_after(options_.connect_timeout);
  connect_timer_.async_wait([weak, gen](const boost::system::error_code& ec) {
    auto self = weak.lock();
    // The state check covers a timer that fired just as the connect completed: cancel() in
    // on_connected() cannot recall a completion already queued.
    if (ec || !self || gen != self->generation_ || self->state_ != State::Connecting) return;
    self->connect_failed("connect timeout after " +
                         std::to_string(to_us(self->options_.connect_timeout) / 1000) + " ms");
  });

  resolver_.async_resolve(
      options_.host, std::to_string(options_.port),
      [weak, gen](const boost::system::error_code& ec, const tcp::resolver::results_type& results) {
        auto self = weak.lock();
        if (!self || gen != self->generation_) return;
        if (ec) {
          self->connect_failed("resolve " + self->options_.host + ": " + ec.message());
          return;
        }
        asio::async_connect(
            self->socket_, results,
            [weak, gen](const boost::system::error_code& cec, const tcp::endpoint&) {
              auto s = weak.lock();
              if (!s || gen != s->generation_) return;
              if (cec) {
                s->connect_failed("connect: " + cec.message());
                return;
              }
              s->on_connected(gen);
            });
      });
}

void RedisConnection::on_connected(uint64_t gen) {
  connect_timer_.cancel();
  boost::system::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);  // pipelined small commands: no Nagle delay
  socket_.set_option(asio::socket_base::keep_alive(true), ignored);
  parser_.reset();
  out_.clear();
  queued_bytes_ = 0;
  written_from_ = 0;
  txn_error_.clear();
  connected_at_ = SteadyClock::now();
  stats_.connects.fetch_add(1, std::memory_order_relaxed);
  if (stats_.connects.load(std::memory_order_relaxed) > 1 || down_logged_) {
    spdlog::info("redis {}: connected", endpoint_);
  }
  down_logged_ = false;
  // Setup goes first, so the listener's commands (sent from set_state) run after it.
  if (!options_.client_name.empty()) {
    enqueue(RedisCommand("CLIENT").arg("SETNAME").arg(options_.client_name), Slot::Setup,
            TimePoint::max(), nullptr);
  }
  read_next(gen);
  set_state(State::Connected);
}

void RedisConnection::connect_failed(const std::string& why) {
  ++generation_;
  connect_timer_.cancel();
  resolver_.cancel();
  boost::system::error_code ignored;
  socket_.close(ignored);
  stats_.connect_failures.fetch_add(1, std::memory_order_relaxed);
  stats_.set_last_error(why);
  if (!down_logged_) {
    spdlog::warn("redis {}: cannot connect: {} (retrying with backoff)", endpoint_, why);
    down_logged_ = true;
  } else {
    spdlog::debug("redis {}: cannot connect: {}", endpoint_, why);
  }
  schedule_reconnect();
}

Duration RedisConnection::backoff(unsigned attempt) {
  const auto min_ns = std::max<int64_t>(1, options_.reconnect_min.count());
  const auto max_ns = std::max<int64_t>(min_ns, options_.reconnect_max.count());
  int64_t cap = min_ns;
  for (unsigned i = 0; i < attempt && cap < max_ns; ++i) cap *= 2;
  cap = std::min(cap, max_ns);
  std::uniform_int_distribution<int64_t> half(0, cap / 2);
  return Duration(cap - cap / 2 + half(rng_));
}

void RedisConnection::schedule_reconnect() {
  set_state(State::WaitingToReconnect);
  if (state_ != State::WaitingToReconnect) return;  // the listener closed us
  const Duration delay = backoff(attempt_++);
  retry_timer_.expires_after(delay);
  std::weak_ptr<RedisConnection> weak = weak_from_this();
  retry_timer_.async_wait([weak](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || self->state_ != State::WaitingToReconnect) return;
    self->connect_now();
  });
}

void RedisConnection::teardown(const std::string& why, TimePoint expired_at) {
  ++generation_;
  deadline_timer_.cancel();
  deadline_armed_ = false;
  boost::system::error_code ignored;
  socket_.close(ignored);
  std::deque<Pending> failed;
  failed.swap(pending_);
  const uint64_t sent_before = written_from_;
  out_.clear();
  writing_.clear();
  write_active_ = false;
  parser_.reset();
  stats_.disconnects.fetch_add(1, std::memory_order_relaxed);
  stats_.in_flight.fetch_sub(static_cast<int64_t>(failed.size()), std::memory_order_relaxed);
  stats_.set_last_error(why);
  spdlog::warn("redis {}: connection lost: {} ({} commands in flight failed)", endpoint_, why,
               failed.size());
  // A connection that worked for a while restarts the backoff; one that drops right after
  // connecting (Redis refusing clients, a proxy in front without a backend) keeps it growing.
  if (SteadyClock::now() - connected_at_ > options_.reconnect_max) attempt_ = 0;
  down_logged_ = true;
  schedule_reconnect();

  for (Pending& p : failed) {
    stats_.failed.fetch_add(1, std::memory_order_relaxed);
    if (!p.cb) continue;
    if (p.deadline <= expired_at) {
      stats_.timeouts.fetch_add(1, std::memory_order_relaxed);
      p.cb(RedisError{RedisErrorKind::Timeout, why});
    } else if (p.start_offset >= sent_before) {
      p.cb(RedisError{RedisErrorKind::NotConnected, "connection lost before sending: " + why});
    } else {
      p.cb(RedisError{RedisErrorKind::ConnectionLost, why});
    }
  }
}

void RedisConnection::close() {
  if (state_ == State::Closed) return;
  ++generation_;
  connect_timer_.cancel();
  retry_timer_.cancel();
  deadline_timer_.cancel();
  deadline_armed_ = false;
  resolver_.cancel();
  boost::system::error_code ignored;
  socket_.close(ignored);
  std::deque<Pending> failed;
  failed.swap(pending_);
  out_.clear();
  writing_.clear();
  write_active_ = false;
  stats_.in_flight.fetch_sub(static_cast<int64_t>(failed.size()), std::memory_order_relaxed);
  set_state(State::Closed);
  for (Pending& p : failed) {
    stats_.failed.fetch_add(1, std::memory_order_relaxed);
    if (!p.cb) continue;
    asio::post(io_, [cb = std::move(p.cb)] {
      cb(RedisError{RedisErrorKind::ConnectionLost, "connection closed by its owner"});
    });
  }
}

void RedisConnection::post_failure(Callback cb, RedisErrorKind kind, std::string message) {
  stats_.failed.fetch_add(1, std::memory_order_relaxed);
  asio::post(io_, [cb = std::move(cb), kind, message = std::move(message)]() mutable {
    cb(RedisError{kind, std::move(message)});
  });
}

TimePoint RedisConnection::deadline_after(Duration timeout) const {
  // LoopTime: one clock read per handler however many commands it sends.
  return timeout > Duration::zero() ? LoopTime::now() + timeout : TimePoint::max();
}

void RedisConnection::send(const RedisCommand& command, Callback cb) {
  send(command, options_.command_timeout, std::move(cb));
}

void RedisConnection::send(const RedisCommand& command, Duration timeout, Callback cb) {
  if (state_ != State::Connected) {
    post_failure(std::move(cb), RedisErrorKind::NotConnected,
                 std::string("redis ") + endpoint_ + " " + redis_state_name(state_));
    return;
  }
  if (pending_.size() >= options_.max_in_flight) {
    post_failure(std::move(cb), RedisErrorKind::Overloaded,
                 std::to_string(pending_.size()) + " commands in flight");
    return;
  }
  enqueue(command, Slot::User, deadline_after(timeout), std::move(cb));
}

void RedisConnection::send_transaction(const std::vector<RedisCommand>& commands, Callback cb) {
  send_transaction(commands, options_.command_timeout, std::move(cb));
}

void RedisConnection::send_transaction(const std::vector<RedisCommand>& commands, Duration timeout,
                                       Callback cb) {
  if (commands.empty()) {
    post_failure(std::move(cb), RedisErrorKind::BadArgument, "empty transaction");
    return;
  }
  if (state_ != State::Connected) {
    post_failure(std::move(cb), RedisErrorKind::NotConnected,
                 std::string("redis ") + endpoint_ + " " + redis_state_name(state_));
    return;
  }
  if (pending_.size() + commands.size() + 2 > options_.max_in_flight) {
    post_failure(std::move(cb), RedisErrorKind::Overloaded,
                 std::to_string(pending_.size()) + " commands in flight");
    return;
  }
  enqueue(RedisCommand("MULTI"), Slot::TxnPart, TimePoint::max(), nullptr);
  for (const RedisCommand& c : commands) enqueue(c, Slot::TxnPart, TimePoint::max(), nullptr);
  enqueue(RedisCommand("EXEC"), Slot::TxnExec, deadline_after(timeout), std::move(cb));
}

void RedisConnection::enqueue(const RedisCommand& command, Slot slot, TimePoint deadline,
                              Callback cb) {
  pending_.push_back(Pending{std::move(cb), deadline, queued_bytes_, slot});
  const std::size_t before = out_.size();
  command.append_to(out_);
  queued_bytes_ += out_.size() - before;
  stats_.commands.fetch_add(1, std::memory_order_relaxed);
  stats_.in_flight.fetch_add(1, std::memory_order_relaxed);
  if (deadline != TimePoint::max() && (!deadline_armed_ || deadline < deadline_at_)) {
    arm_deadline(deadline);
  }
  schedule_flush();
}

void RedisConnection::schedule_flush() {
  // One write per handler's worth of commands: a worker that enqueues many calls while
  // handling one read batch sends them in one system call.
  if (flush_posted_ || write_active_) return;
  flush_posted_ = true;
  std::weak_ptr<RedisConnection> weak = weak_from_this();
  asio::post(io_, [weak] {
    auto self = weak.lock();
    if (!self) return;
    self->flush_posted_ = false;
    if (self->state_ == State::Connected) self->flush();
  });
}

void RedisConnection::flush() {
  if (write_active_ || out_.empty()) return;
  writing_.swap(out_);
  out_.clear();
  written_from_ = queued_bytes_;
  write_active_ = true;
  const uint64_t gen = generation_;
  std::weak_ptr<RedisConnection> weak = weak_from_this();
  asio::async_write(socket_, asio::buffer(writing_),
                    [weak, gen](const boost::system::error_code& ec, std::size_t) {
                      auto self = weak.lock();
                      if (!self || gen != self->generation_) return;
                      self->write_active_ = false;
                      self->writing_.clear();
                      if (ec) {
                        self->teardown("write: " + ec.message());
                        return;
                      }
                      self->flush();
                    });
}

void RedisConnection::read_next(uint64_t gen) {
  std::weak_ptr<RedisConnection> weak = weak_from_this();
  socket_.async_read_some(asio::buffer(read_buf_),
                          [weak, gen](const boost::system::error_code& ec, std::size_t n) {
                            auto self = weak.lock();
                            if (!self || gen != self->generation_) return;
                            if (ec) {
                              self->teardown(ec == asio::error::eof ? std::string("closed by Redis")
                                                                    : "read: " + ec.message());
                              return;
                            }
                            self->on_read(n);
                            if (gen == self->generation_) self->read_next(gen);
                          });
}

void RedisConnection::on_read(std::size_t n) {
  const uint64_t gen = generation_;
  parser_.feed(std::string_view(read_buf_.data(), n));
  RespValue value;
  for (;;) {
    const RespParser::Status status = parser_.next(value);
    if (status == RespParser::Status::NeedMore) return;
    if (status == RespParser::Status::Error) {
      teardown("protocol error: " + parser_.error());
      return;
    }
    if (pending_.empty()) {
      // Redis says why it is about to close ("-ERR max number of clients reached").
      teardown("unexpected reply: " + shorten(value.debug_string()));
      return;
    }
    complete_front(std::move(value));
    if (gen != generation_) return;  // a callback closed the connection
  }
}

void RedisConnection::complete_front(RespValue value) {
  Pending p = std::move(pending_.front());
  pending_.pop_front();
  stats_.replies.fetch_add(1, std::memory_order_relaxed);
  stats_.in_flight.fetch_sub(1, std::memory_order_relaxed);
  attempt_ = 0;  // Redis answers: the next outage starts the backoff afresh
  if (value.is_error()) stats_.error_replies.fetch_add(1, std::memory_order_relaxed);
  switch (p.slot) {
    case Slot::Setup:
      if (value.is_error()) {
        spdlog::warn("redis {}: connection setup: {}", endpoint_, shorten(value.str()));
      }
      return;
    case Slot::TxnPart:
      if (value.is_error() && txn_error_.empty()) txn_error_ = value.str();
      return;
    case Slot::TxnExec:
      if (value.is_error() && !txn_error_.empty()) {
        value = RespValue::error(value.str() + " (" + txn_error_ + ")");
      }
      txn_error_.clear();
      break;
    case Slot::User:
      break;
  }
  if (value.is_error()) {
    p.cb(RedisError{RedisErrorKind::Server, std::move(value.mutable_str())});
  } else {
    p.cb(std::move(value));
  }
}

void RedisConnection::arm_deadline(TimePoint at) {
  deadline_armed_ = true;
  deadline_at_ = at;
  deadline_timer_.expires_at(at);
  std::weak_ptr<RedisConnection> weak = weak_from_this();
  const uint64_t gen = generation_;
  deadline_timer_.async_wait([weak, gen](const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    auto self = weak.lock();
    if (self && gen == self->generation_) self->on_deadline();
  });
}

void RedisConnection::on_deadline() {
  deadline_armed_ = false;
  if (state_ != State::Connected) return;
  // The timer fires at the earliest deadline it was armed for; commands may have completed
  // since, so look at what is still in flight (a scan per firing, not per command).
  const TimePoint now = SteadyClock::now();
  TimePoint earliest = TimePoint::max();
  for (const Pending& p : pending_) {
    if (p.deadline <= now) {
      teardown("no reply within the command timeout", now);
      return;
    }
    earliest = std::min(earliest, p.deadline);
  }
  if (earliest != TimePoint::max()) arm_deadline(earliest);
}

}  // namespace sluice::queue
