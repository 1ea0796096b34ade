// One TCP connection to one Redis server on one io_context: pipelined commands whose replies
// are matched in FIFO order, a per-command timeout, and reconnection with backoff.
//
// Threading: every member function must be called on the io_context's thread (one worker, one
// connection, no locks on the data path). Stats are atomics and may be read from any thread.
//
// The rules a caller can rely on:
// - Every send() completes its callback exactly once, from the io_context, never inside the
//   call into RedisConnection (not even on immediate failure, which is posted).
// - Not connected (connecting, waiting to reconnect, closed): send() fails fast with
//   NotConnected; nothing is queued for later. The owner learns when to resume from the state
//   listener. Failing fast is what lets a frontend answer UNAVAILABLE at once when Redis is down.
// - The connection drops (EOF, reset, protocol error, a timeout): every command in flight
//   completes with ConnectionLost (or NotConnected if its bytes never reached the socket), in
//   the order sent. Nothing is re-sent: XADD is not idempotent, so only the owner can decide
//   whether a retry is safe.
// - A command without a reply within its timeout completes with Timeout and the connection is
//   reset. In a FIFO pipeline every later reply waits behind the missing one, and a silent
//   peer is how a half-open connection (Redis host gone without a RST) shows itself: keeping
//   the socket would leave every caller waiting for TCP's retransmission timeout (~15 min).
// - Reconnection: immediately after the first start(), then after each failure with
//   exponential backoff (reconnect_min doubling up to reconnect_max) with equal jitter (a
//   random half), so many sidecars that lost one Redis do not reconnect in lockstep. The
//   backoff restarts once a connection answers a command or stays up longer than
//   reconnect_max.
// - Blocking commands (BLPOP, BRPOP, XREADGROUP ... BLOCK) hold the connection until they
//   return: every command sent after them waits. Give each blocking loop its own
//   RedisConnection (they are cheap: one socket, one parser) and set the command timeout
//   longer than the blocking time (RedisStreams does both for its blocking helpers).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "src/core/time.h"
#include "src/queue/redis_command.h"
#include "src/queue/redis_error.h"
#include "src/queue/resp_parser.h"
#include "src/queue/resp_value.h"

namespace sluice::queue {

class RedisConnection : public std::enable_shared_from_this<RedisConnection> {
  struct Passkey {};

 public:
  struct Options {
    std::string host = "127.0.0.1";  // name or address (resolved on every connect)
    uint16_t port = 6379;
    std::string client_name;  // sent as CLIENT SETNAME on every connect (shows in CLIENT LIST)
    Duration connect_timeout = std::chrono::seconds(1);
    Duration command_timeout = std::chrono::seconds(2);  // send()'s default; zero: no timeout
    // Backoff between connect attempts. The cap bounds how long a connection stays down after
    // Redis is back (up to one step); Redis accepts thousands of connects per second, so a
    // second is cheap even for many sidecars retrying at once.
    Duration reconnect_min = std::chrono::milliseconds(50);
    Duration reconnect_max = std::chrono::seconds(1);
    std::size_t max_in_flight = 65536;  // beyond this, send() fails with Overloaded
    RespLimits limits;
  };

  enum class State {
    Idle,                // created, start() not called yet
    Connecting,          // resolving or connecting
    Connected,           // send() works
    WaitingToReconnect,  // a connect failed or the connection dropped; a retry is scheduled
    Closed,              // close() was called; final
  };

  using Callback = std::function<void(RedisResult<RespValue>)>;
  // Called on every state change, after the change (Connected: commands sent from the listener
  // go out right after the connection's own setup commands).
  using StateListener = std::function<void(State)>;

  // Counters for /stats; written on the io thread only, readable from any thread.
  class Stats {
   public:
    std::atomic<bool> connected{false};
    std::atomic<uint64_t> connects{0};          // connections established (first + reconnects)
    std::atomic<uint64_t> connect_failures{0};  // attempts that did not connect
    std::atomic<uint64_t> disconnects{0};       // established connections lost (not close())
    std::atomic<uint64_t> commands{0};          // commands written to the connection
    std::atomic<uint64_t> replies{0};           // replies received
    std::atomic<uint64_t> error_replies{0};     // of those, Redis error replies
    std::atomic<uint64_t> timeouts{0};          // commands that completed with Timeout
    std::atomic<uint64_t> failed{0};            // completed with a connection-side error
    std::atomic<int64_t> in_flight{0};

    std::string last_error() const;
    void set_last_error(std::string error);

   private:
    mutable std::mutex mu_;  // last_error_ only: written on failures, read by /stats
    std::string last_error_;
  };

  static std::shared_ptr<RedisConnection> create(boost::asio::io_context& io, Options options);
  RedisConnection(Passkey, boost::asio::io_context& io, Options options);
  // Commands still in flight complete with ConnectionLost (posted to the io_context).
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Starts connecting (once; later calls do nothing).
  void start();
  // Stops for good: no reconnect; commands in flight complete with ConnectionLost.
  void close();

  // Sends `command` with the default timeout, or with `timeout` (zero: none).
  void send(const RedisCommand& command, Callback cb);
  void send(const RedisCommand& command, Duration timeout, Callback cb);
  // MULTI, `commands`, EXEC in one write: Redis runs all or none of them, even if the
  // connection drops in between. `cb` gets EXEC's reply: an array with one reply per command
  // (an element may be an error reply), or a Server error (EXECABORT names the first refused
  // command's error).
  void send_transaction(const std::vector<RedisCommand>& commands, Callback cb);
  void send_transaction(const std::vector<RedisCommand>& commands, Duration timeout, Callback cb);

  void set_state_listener(StateListener listener) { listener_ = std::move(listener); }

  State state() const { return state_; }
  bool connected() const { return state_ == State::Connected; }
  std::size_t in_flight() const { return pending_.size(); }
  const Stats& stats() const { return stats_; }
  const Options& options() const { return options_; }
  boost::asio::io_context& io() { return io_; }
  // "host:port", for logs.
  const std::string& endpoint() const { return endpoint_; }

 private:
  enum class Slot { User, Setup, TxnPart, TxnExec };
  struct Pending {
    Callback cb;  // empty for Setup and TxnPart
    TimePoint deadline;
    uint64_t start_offset;  // position of the command's first byte in the connection's output
    Slot slot;
  };

  void connect_now();
  void on_connected(uint64_t gen);
  void connect_failed(const std::string& why);
  void schedule_reconnect();
  Duration backoff(unsigned attempt);
  // Drops the established connection: commands in flight fail (those whose deadline is at or
  // before `expired_at` with Timeout), then a reconnect is scheduled.
  void teardown(const std::string& why, TimePoint expired_at = TimePoint::min());
  void set_state(State s);

  void enqueue(const RedisCommand& command, Slot slot, TimePoint deadline, Callback cb);
  TimePoint deadline_after(Duration timeout) const;
  void schedule_flush();
  void flush();
  void read_next(uint64_t gen);
  void on_read(std::size_t n);
  void complete_front(RespValue value);
  void arm_deadline(TimePoint at);
  void on_deadline();
  void post_failure(Callback cb, RedisErrorKind kind, std::string message);

  boost::asio::io_context& io_;
  Options options_;
  std::string endpoint_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer connect_timer_;
  boost::asio::steady_timer retry_timer_;
  boost::asio::steady_timer deadline_timer_;

  State state_ = State::Idle;
  // Bumped whenever a socket is given up: a handler of an older socket sees a different value
  // and does nothing.
  uint64_t generation_ = 0;

  std::string out_;      // encoded commands not yet handed to a write
  std::string writing_;  // the bytes of the write in flight
  bool write_active_ = false;
  bool flush_posted_ = false;
  uint64_t queued_bytes_ = 0;  // bytes appended to out_ on this connection
  uint64_t written_from_ = 0;  // bytes handed to writes so far (the rest never left)

  std::deque<Pending> pending_;  // in the order sent = the order replies arrive
  std::string txn_error_;        // first error of a queued transaction part, for EXECABORT
  RespParser parser_;
  std::vector<char> read_buf_;

  bool deadline_armed_ = false;
  TimePoint deadline_at_{};

  unsigned attempt_ = 0;  // connect attempts since the backoff last restarted
  TimePoint connected_at_{};
  bool down_logged_ = false;  // one warning per outage, not one per attempt
  std::minstd_rand rng_;
  StateListener listener_;
  Stats stats_;
};

const char* redis_state_name(RedisConnection::State state);

}  // namespace sluice::queue
