// Redis Streams and reply lists for queue mode: typed commands over a RedisConnection.
//
// Design note (issue 16)
//
// Work path. A frontend XADDs one entry per admitted unary call to <stream> (QueueEnvelope:
// method, metadata, body, absolute wall-clock deadline, reply key, call id), with MAXLEN ~ as
// a safety net only. Consumers of the group XREADGROUP ">" with COUNT = the permits their
// limiter can grant now (COUNT 0 means "no limit" to Redis: xreadgroup() refuses it), run each
// call, push the reply, then XACK + XDEL (ack_and_delete(): acknowledged entries are deleted so
// the stream holds only backlog and work in hand, and does not grow without bound). A long call
// keeps its entry by re-claiming it with XCLAIM <self> ... JUSTID before claim_after (resets
// the idle time, does not count a delivery); entries of dead consumers are taken over with
// XAUTOCLAIM min-idle = claim_after; XPENDING's delivery counts decide dead-lettering
// (dead_letter(): XADD <stream>:dead + XACK + XDEL in one MULTI, then the caller is told).
//
// Reply path: one reply list per frontend instance, read by one BLPOP loop, not one key per
// call. A per-call key read by BLPOP needs a blocking connection per call in flight: 2,000
// waiting calls hold 2,000 Redis connections (maxclients is 10,000 for all frontends and
// consumers together), opened per call or pooled as large as the concurrency. A per-frontend
// list needs one blocking connection per frontend (or per worker) at any concurrency; replies
// carry the call id and the frontend matches them in a hash map. After each BLPOP wake-up the
// loop drains the list with LPOP <key> <n>, so at high rates one round trip carries many
// replies (ReplyInbox is that loop). The costs: a reply for a call already answered (deadline
// passed) is popped and dropped (count it), and the key must be unique per frontend incarnation
// (host:pid:random) so a restarted frontend never pops replies meant for its predecessor. Not
// pub/sub: a reply published before the subscription is lost; a list keeps it until it is read.
// reply_to in the envelope is only a list key, so consumers work with either choice.
//
// TTLs. Consumers push with MULTI RPUSH PEXPIRE EXEC (push_reply()): atomic, so a list never
// exists without a TTL even when the connection drops between the two commands (a plain
// pipeline could leave such a list behind forever once its frontend is gone); MULTI and EXEC
// travel in the same write, so atomicity costs no round trip. RPUSH rather than LPUSH: the
// reader pops from the left, so a shared list is FIFO and under a backlog the oldest reply,
// the one nearest its deadline, is read first. Every push refreshes the TTL; it matters only
// once the frontend is gone, when the list and its unread replies expire. It must exceed the
// longest pause of the reading loop (a reconnect backoff step, <= 1 s): 60 s is plenty.
//
// Redis restart. Each RedisConnection reconnects by itself (redis_connection.h); commands in
// flight fail with ConnectionLost and nothing is re-sent. Without persistence a restart loses
// the stream, the group, the pending lists and the reply lists:
// - Consumers get NOGROUP from XREADGROUP: create_group() again, with start id "0" (not "$"),
//   so entries XADDed after the restart but before the group came back are read, not
//   skipped; then carry on. Replies of calls in hand are pushed as usual.
// - Frontends: calls waiting for a reply whose entry was lost would wait until their deadline.
//   INFO server's run_id changes with a restart; ReplyInbox compares it on every reconnect and
//   fails the waiting calls at once (the frontend answers UNAVAILABLE). With AOF persistence
//   entries survive and waiting is right: fail_waiting_on_restart = false.
// - The BLPOP loop issues its BLPOP again once its connection is back. A reply popped just as
//   the connection dropped is lost with it; its caller ends at its deadline (BLMOVE into a
//   processing list would close that gap for one more command per reply; not worth it while a
//   restart loses queued entries anyway).
//
// At-least-once: a consumer that dies after calling the service but before XACK leaves the
// entry pending; after claim_after another consumer runs it again. The frontend answers the
// first reply for a call id and drops any later one, so the caller gets exactly one reply.
//
// All methods: call on the connection's io_context thread; every callback runs exactly once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/time.h"
#include "src/queue/redis_command.h"
#include "src/queue/redis_connection.h"
#include "src/queue/redis_replies.h"

namespace sluice {
struct QueueConfig;
}  // namespace sluice

namespace sluice::queue {

// How to reach `queue`'s Redis, as `client_name` (CLIENT SETNAME: who is who in CLIENT LIST).
RedisConnection::Options redis_options(const QueueConfig& queue, std::string client_name);

// A group's state as queue mode reads it: what waits, what is in hand, and the delivery count.
struct GroupBacklog {
  // Entries not yet delivered: the group's lag, or, when Redis cannot tell it (deletions after
  // the group's last delivery), the stream's length less the pending entries. Consumers delete
  // what they acknowledge, so the stream holds only the backlog and the entries in hand.
  int64_t backlog = 0;
  int64_t pending = 0;    // delivered, not yet acknowledged
  int64_t consumers = 0;  // as the group knows them
  // Entries delivered since the group began (XINFO GROUPS entries-read); nullopt when unknown.
  std::optional<int64_t> entries_read;
  // XLEN: the backlog, the entries in hand and whatever nobody deleted (entries of another
  // group, of a consumer that does not XDEL); nullopt when XLEN failed.
  std::optional<int64_t> length;
};

class RedisStreams {
 public:
  template <typename T>
  using Callback = std::function<void(RedisResult<T>)>;

  // XREADGROUP GROUP <group> <consumer> COUNT <count> [BLOCK <ms>] STREAMS <stream> <id>
  struct ReadGroupArgs {
    std::string stream;
    std::string group;
    std::string consumer;
    uint64_t count = 1;  // >= 1: the entries the caller can start now
    // Wait up to this long for new entries (a dedicated connection!); zero: do not block.
    Duration block = Duration::zero();
    std::string id = ">";  // ">": new entries; "0": this consumer's pending entries
  };

  // XPENDING <stream> <group> [IDLE <ms>] <start> <end> <count> [<consumer>]
  struct PendingQuery {
    std::string start = "-";
    std::string end = "+";
    uint64_t count = 100;
    std::string consumer;                  // empty: every consumer
    Duration min_idle = Duration::zero();  // zero: no IDLE filter
  };

  explicit RedisStreams(std::shared_ptr<RedisConnection> connection);

  RedisConnection& connection() { return *connection_; }

  // XGROUP CREATE <stream> <group> <start_id> MKSTREAM. true: created; false: it existed
  // (BUSYGROUP is not an error here).
  void create_group(std::string_view stream, std::string_view group, std::string_view start_id,
                    Callback<bool> cb);
  // XADD <stream> [MAXLEN ~ <n>] * field value ...; the new entry's id.
  void xadd(std::string_view stream, const StreamFields& fields,
            std::optional<uint64_t> max_len_approx, Callback<std::string> cb);
  // Entries for this consumer; empty when none (or BLOCK timed out). Blocking reads get a
  // command timeout of `block` + the connection's command_timeout.
  void xreadgroup(const ReadGroupArgs& args, Callback<std::vector<StreamEntry>> cb);
  // XACK: how many of `ids` were pending.
  void xack(std::string_view stream, std::string_view group, const std::vector<std::string>& ids,
            Callback<int64_t> cb);
  // XDEL: how many of `ids` were deleted.
  void xdel(std::string_view stream, const std::vector<std::string>& ids, Callback<int64_t> cb);
  // XACK then XDEL in one write (not a transaction: if only XACK runs, the entry stays in the
  // stream acknowledged, harmless, and MAXLEN trims it). Result: XACK's count.
  void ack_and_delete(std::string_view stream, std::string_view group,
                      const std::vector<std::string>& ids, Callback<int64_t> cb);
  // XAUTOCLAIM <stream> <group> <consumer> <min_idle ms> <start> COUNT <count> [JUSTID].
  // Redis scans at most 10 x count pending entries per call: continue from next_cursor until
  // it is "0-0".
  void xautoclaim(std::string_view stream, std::string_view group, std::string_view consumer,
                  Duration min_idle, std::string_view start, uint64_t count, bool justid,
                  Callback<AutoClaimResult> cb);
  // XCLAIM ... JUSTID: takes `ids` (or keeps them, when `consumer` already owns them) and
  // resets their idle time without counting a delivery. What a consumer calls on its own
  // long-running entries so that nobody's XAUTOCLAIM steals them. Result: the ids claimed.
  void xclaim_justid(std::string_view stream, std::string_view group, std::string_view consumer,
                     Duration min_idle, const std::vector<std::string>& ids,
                     Callback<std::vector<std::string>> cb);
  // XCLAIM without JUSTID: counts a delivery and returns the entries (deleted ones are left out).
  void xclaim(std::string_view stream, std::string_view group, std::string_view consumer,
              Duration min_idle, const std::vector<std::string>& ids,
              Callback<std::vector<StreamEntry>> cb);
  void xpending_summary(std::string_view stream, std::string_view group,
                        Callback<PendingSummary> cb);
  void xpending(std::string_view stream, std::string_view group, const PendingQuery& query,
                Callback<std::vector<PendingEntry>> cb);
  void xlen(std::string_view stream, Callback<int64_t> cb);
  void xinfo_groups(std::string_view stream, Callback<std::vector<GroupInfo>> cb);
  // XINFO GROUPS and XLEN in one write: `group`'s backlog (an error when the group is missing).
  void group_backlog(std::string_view stream, std::string_view group, Callback<GroupBacklog> cb);
  // MULTI, XADD <dead_stream> [MAXLEN ~ n] * <entry's fields> dead_from <id> dead_reason
  // <reason>, XACK, XDEL, EXEC: the entry moves atomically. Result: the dead-letter entry's id.
  void dead_letter(std::string_view stream, std::string_view group, std::string_view dead_stream,
                   const StreamEntry& entry, std::string_view reason,
                   std::optional<uint64_t> max_len_approx, Callback<std::string> cb);

  // MULTI, RPUSH <key> <value>, PEXPIRE <key> <ttl ms>, EXEC. Result: the list's length.
  void push_reply(std::string_view key, std::string_view value, Duration ttl, Callback<int64_t> cb);
  // BLPOP <key> <timeout s> (a dedicated connection!): nullopt when the timeout passed.
  // `timeout` must be positive (BLPOP 0 would block forever, past any command timeout).
  void blpop(std::string_view key, Duration timeout, Callback<std::optional<PoppedValue>> cb);
  // LPOP <key> <count>: up to `count` values, oldest push first; empty when the list is.
  void lpop(std::string_view key, uint64_t count, Callback<std::vector<std::string>> cb);
  // INFO <sections...> ("memory", "cpu", "server"): key -> value.
  void info(const std::vector<std::string>& sections, Callback<RedisInfo> cb);

  // The commands as sent, for callers that build their own pipelines and for tests.
  static RedisCommand xadd_command(std::string_view stream, const StreamFields& fields,
                                   std::optional<uint64_t> max_len_approx);
  static RedisCommand xreadgroup_command(const ReadGroupArgs& args);
  static RedisCommand xautoclaim_command(std::string_view stream, std::string_view group,
                                         std::string_view consumer, Duration min_idle,
                                         std::string_view start, uint64_t count, bool justid);
  static RedisCommand xpending_command(std::string_view stream, std::string_view group,
                                       const PendingQuery& query);
  static RedisCommand blpop_command(std::string_view key, Duration timeout);

 private:
  template <typename T>
  void fail_later(Callback<T> cb, std::string message);

  std::shared_ptr<RedisConnection> connection_;
};

// Milliseconds for Redis arguments, rounded up so that a positive duration never becomes 0
// (which means "forever" to BLOCK).
int64_t redis_ms(Duration d);

}  // namespace sluice::queue
