// The frontend's end of the reply path (design note in redis_streams.h): one reply list read
// by one BLPOP loop on a dedicated connection, replies matched to waiting calls by call id.
//
// Use one inbox per worker (key "<stream>:reply:<frontend id>:<worker>"): it lives on that
// worker's io_context like the calls it serves, so nothing is shared across threads, and the
// number of blocking connections is the number of workers, whatever the concurrency.
//
// What it guarantees a waiting call: its handler runs at most once, with the reply whose call
// id matches or with an error; after forget() it never runs. Replies nobody waits for (the
// call ended at its deadline, a duplicate after a consumer crash) are dropped and counted.
// When the connection comes back from an outage the inbox asks INFO server for Redis's
// run_id: a different one means Redis restarted, and without persistence every queued entry
// and unread reply is gone, so (fail_waiting_on_restart) the waiting calls fail at once with
// ConnectionLost instead of at their deadline. Calls registered during the outage fail too:
// the inbox cannot tell on which side of the restart they were enqueued.
//
// Call every member on the connection's io_context thread.
#pragma once

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "src/core/time.h"
#include "src/queue/queue_reply.h"
#include "src/queue/redis_connection.h"
#include "src/queue/redis_streams.h"
#include "src/stats/counter.h"

namespace sluice::queue {

class ReplyInbox : public std::enable_shared_from_this<ReplyInbox> {
  struct Passkey {};

 public:
  struct Options {
    std::string key;                                              // the reply list
    Duration block = std::chrono::seconds(1);                     // BLPOP timeout of one round
    uint64_t drain_batch = 128;                                   // LPOP count after each wake-up
    Duration retry_after_error = std::chrono::milliseconds(100);  // Redis answered an error
    bool fail_waiting_on_restart = true;  // false when Redis persists (AOF): entries survive
    // Also counts the undecodable replies (the frontend's queue.<q>.frontend_reply_decode_error
    // _total, shared by its workers' inboxes); may be null.
    Counter* undecodable_total = nullptr;
  };

  // For /stats; written on the io thread, readable anywhere.
  struct Stats {
    std::atomic<uint64_t> delivered{0};    // replies handed to their call
    std::atomic<uint64_t> unmatched{0};    // replies for no waiting call (late, duplicate)
    std::atomic<uint64_t> undecodable{0};  // list elements that are not a QueueReply
    std::atomic<uint64_t> restarts{0};     // Redis restarts seen (run_id changed)
    std::atomic<int64_t> waiting{0};
  };

  using Handler = std::function<void(RedisResult<QueueReply>)>;

  // `connection` must be dedicated to this inbox: BLPOP occupies it, and the inbox takes its
  // state listener.
  static std::shared_ptr<ReplyInbox> create(std::shared_ptr<RedisConnection> connection,
                                            Options options);
  ReplyInbox(Passkey, std::shared_ptr<RedisConnection> connection, Options options);
  ReplyInbox(const ReplyInbox&) = delete;
  ReplyInbox& operator=(const ReplyInbox&) = delete;

  // Starts the loop (and the connection, if not started yet).
  void start();
  // Stops the loop and closes the connection (a BLPOP in flight cannot be recalled); calls
  // still waiting complete with ConnectionLost (posted). Final. At SIGTERM a frontend stops
  // taking calls, lets the waiting ones get their replies, then stops the inbox.
  void stop();

  // Registers a call before its entry is XADDed (so that a fast reply is never missed).
  // false: `call_id` is already waiting (ids must be unique per inbox).
  bool expect(const std::string& call_id, Handler handler);
  // The call ended without its reply (deadline, cancel): its handler will not run. false if it
  // was not waiting.
  bool forget(const std::string& call_id);

  std::size_t waiting() const { return waiting_.size(); }
  const std::string& key() const { return options_.key; }
  const Stats& stats() const { return stats_; }

 private:
  void on_state(RedisConnection::State state);
  void pop();
  void drain();
  void retry_later();
  void deliver(const std::string& bytes);
  void check_restart();
  void fail_all(const RedisError& error);

  std::shared_ptr<RedisConnection> connection_;
  RedisStreams streams_;
  Options options_;
  boost::asio::steady_timer retry_timer_;
  std::unordered_map<std::string, Handler> waiting_;
  bool running_ = false;
  bool reading_ = false;  // a BLPOP or LPOP is in flight
  std::string run_id_;    // Redis's, as of the last connect
  Stats stats_;
};

}  // namespace sluice::queue
