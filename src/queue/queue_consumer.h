// Queue mode, pod side: pulls calls from a queue's consumer group and runs them on a cluster,
// as many at once as its limiter filters can admit now (design note in redis_streams.h).
//
// The loop: free = the smallest (limit - in_flight - queued) over the chain's limiter filters
// (kNoLimiterWindow without one); free 0 -> wait for a call to end; otherwise XREADGROUP
// COUNT free BLOCK kBlock on a dedicated connection, so it never holds more entries than it can
// start. Each entry: undecodable -> dead-lettered; deadline passed -> replied
// DEADLINE_EXCEEDED without calling the service; else a ConsumerCall. When the call ends:
// push the reply (MULTI RPUSH PEXPIRE), then XACK + XDEL. Every claim_after / 3 the consumer
// re-claims its own entries in hand (XCLAIM JUSTID: resets their idle time), so a long call is
// not taken over, and takes over other consumers' entries idle for claim_after (XAUTOCLAIM);
// a taken-over entry delivered more than max_deliveries times moves to <stream>:dead and its
// caller gets UNAVAILABLE. drain(): stop reading, let the calls in hand finish and reply.
//
// Demand pressure: a consumer never asks its limiters for a permit they cannot grant, so no
// request ever waits or is shed to tell an adaptive limiter (aimd) that there is more work than
// its limit; without that it would never grow. When a read finds the window full, the consumer
// looks at the group's backlog (at most every kDemandPoll): entries waiting while the window is
// full are the demand, told to every filter (FilterFactory::on_demand_pressure).
//
// One per consumer config, on one worker's thread (its cluster pool is that worker's).
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "filters/filter_chain.h"
#include "src/config/config.h"
#include "src/core/dispatcher.h"
#include "src/proxy/upstream_port.h"
#include "src/queue/consumer_call.h"
#include "src/queue/redis_connection.h"
#include "src/queue/redis_streams.h"
#include "src/stats/stats_registry.h"

namespace sluice::queue {

// consumer.<name>.<leaf>
#define SLUICE_QUEUE_CONSUMER_COUNTERS(X)                                                    \
  X(consumer_rq_total, "Entries read from the stream (new and taken over)")                  \
  X(consumer_rq_completed_total, "Calls run on the cluster and replied")                     \
  X(consumer_rq_expired_total, "Entries whose deadline had passed: replied, not run")        \
  X(consumer_rq_dead_lettered_total, "Entries moved to <stream>:dead (max_deliveries, bad)") \
  X(consumer_rq_claimed_total, "Entries taken over from other consumers (XAUTOCLAIM)")       \
  X(consumer_reply_failed_total, "Reply pushes that failed (retried, then left pending)")    \
  X(consumer_read_error_total, "XREADGROUP errors (Redis down, NOGROUP, ...)")               \
  X(consumer_demand_pressure_total, "Entries waited in the stream while the window was full")

#define SLUICE_QUEUE_CONSUMER_GAUGES(X)                               \
  X(consumer_rq_active, "Calls in hand (read, not yet acknowledged)") \
  X(consumer_window, "Entries the consumer may read now (free permits)")

struct ConsumerStats {
  ConsumerStats(StatsRegistry& registry, const std::string& consumer);
#define SLUICE_DECLARE(name, help) Counter& name;
  SLUICE_QUEUE_CONSUMER_COUNTERS(SLUICE_DECLARE)
#undef SLUICE_DECLARE
#define SLUICE_DECLARE(name, help) Gauge& name;
  SLUICE_QUEUE_CONSUMER_GAUGES(SLUICE_DECLARE)
#undef SLUICE_DECLARE
  Histogram& consumer_rq_time_us;
  // consumer_rq_completed_grpc_status_<0..16>_total (the reply's status: the service's, or a
  // local one such as a consumer filter's shed); index 17 counts any other value.
  std::array<Counter*, 18> completed_by_grpc_status{};

  void count_completed(int grpc_status) {
    const std::size_t i =
        grpc_status >= 0 && grpc_status <= 16 ? static_cast<std::size_t>(grpc_status) : 17;
    completed_by_grpc_status[i]->inc();
  }
};

class QueueConsumer {
 public:
  static constexpr uint32_t kNoLimiterWindow = 64;
  static constexpr Duration kBlock = std::chrono::milliseconds(500);
  static constexpr Duration kRetryAfterError = std::chrono::milliseconds(100);
  // Pushes of one reply before its entry is left pending (50 x 100 ms: a Redis restart).
  static constexpr uint32_t kReplyRetries = 50;
  // How often, at most, a consumer with a full window asks Redis whether entries wait.
  static constexpr Duration kDemandPoll = std::chrono::milliseconds(100);

  // `chain` may be null (no filters). `name` is the Redis consumer name (unique per process).
  QueueConsumer(boost::asio::io_context& io, Dispatcher& dispatcher, const QueueConfig& queue,
                const ConsumerConfig& config, std::string name,
                std::shared_ptr<const FilterChain> chain, UpstreamPort& port, ConsumerStats& stats);
  ~QueueConsumer();
  QueueConsumer(const QueueConsumer&) = delete;
  QueueConsumer& operator=(const QueueConsumer&) = delete;

  void start();
  // Stops reading; `done` runs (posted) once every call in hand has replied and been
  // acknowledged.
  void drain(std::function<void()> done);
  // Stops at once: calls in hand are abandoned (their entries stay pending for another
  // consumer to take over after claim_after).
  void stop();

  std::size_t in_hand() const { return calls_.size(); }
  uint32_t window() const;
  const std::string& name() const { return name_; }

 private:
  struct InHand {
    StreamEntry entry;
    std::string reply_to;
    TimePoint read_at{};
    std::unique_ptr<ConsumerCall> call;
  };

  void read();
  void read_later(Duration after);
  void on_entries(std::vector<StreamEntry> entries, bool claimed);
  void handle(StreamEntry entry);
  void reply_and_ack(const std::string& entry_id, const std::string& reply_to,
                     const QueueReply& reply);
  void push_reply(const std::string& entry_id, const std::string& reply_to,
                  const std::shared_ptr<std::string>& bytes, uint32_t attempt);
  void dead_letter(const StreamEntry& entry, const std::string& reply_to,
                   const std::string& call_id, const std::string& reason);
  void on_call_done(const std::string& entry_id, QueueReply reply);
  void maintain();  // re-claim own entries, take over stale ones
  // The window is full: do entries wait in the stream? Then tell the limiters.
  void check_demand();
  void check_drained();
  void ensure_group();

  boost::asio::io_context& io_;
  Dispatcher& dispatcher_;
  const QueueConfig& queue_;
  const ConsumerConfig& config_;
  std::string name_;
  std::shared_ptr<const FilterChain> chain_;
  UpstreamPort& port_;
  ConsumerStats& stats_;
  std::shared_ptr<RedisConnection> reader_conn_;   // XREADGROUP BLOCK
  std::shared_ptr<RedisConnection> command_conn_;  // everything else
  RedisStreams reader_;
  RedisStreams commands_;
  boost::asio::steady_timer read_timer_;
  boost::asio::steady_timer maintain_timer_;
  std::map<std::string, InHand> calls_;  // by entry id
  uint32_t replies_in_flight_ = 0;
  bool reading_ = false;
  bool demand_check_in_flight_ = false;
  TimePoint next_demand_check_{};
  bool read_scheduled_ = false;
  bool draining_ = false;
  bool stopped_ = false;
  std::function<void()> drained_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice::queue
