// Typed forms of the Redis replies queue mode reads, and the functions that check a RespValue
// against the shape Redis 7 sends and convert it. A reply of another shape is a BadReply error,
// never a crash. The shapes (RESP2) are recorded byte for byte in redis_replies_test.cc.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/queue/redis_error.h"
#include "src/queue/resp_value.h"

namespace sluice::queue {

// A stream entry's field-value pairs, in the order they were added (Redis keeps the order and
// allows repeated names).
using StreamFields = std::vector<std::pair<std::string, std::string>>;

struct StreamEntry {
  std::string id;  // "1700000000000-0"
  StreamFields fields;
  // Still in the group's pending list but deleted from the stream (XDEL, trimming): Redis
  // sends it with a nil field list when a consumer re-reads its own history.
  bool deleted = false;

  friend bool operator==(const StreamEntry&, const StreamEntry&) = default;
};

// XAUTOCLAIM (Redis 7: three elements).
struct AutoClaimResult {
  std::string next_cursor;           // "0-0": the scan went through the whole pending list
  std::vector<StreamEntry> entries;  // now owned by the claiming consumer (JUSTID: no fields)
  // Pending ids whose entries were deleted from the stream; Redis has removed them from the
  // pending list. Their callers cannot be told from here (the entry, with its reply key, is gone).
  std::vector<std::string> deleted_ids;
};

// XPENDING <stream> <group>.
struct PendingSummary {
  int64_t count = 0;
  std::string min_id;  // empty when count == 0
  std::string max_id;
  std::vector<std::pair<std::string, int64_t>> consumers;  // consumer name, entries pending
};

// One row of XPENDING <stream> <group> [IDLE ms] <start> <end> <count> [consumer].
struct PendingEntry {
  std::string id;
  std::string consumer;
  int64_t idle_ms = 0;
  int64_t deliveries = 0;  // times delivered (XREADGROUP, XCLAIM/XAUTOCLAIM without JUSTID)

  friend bool operator==(const PendingEntry&, const PendingEntry&) = default;
};

// One group of XINFO GROUPS <stream>.
struct GroupInfo {
  std::string name;
  int64_t consumers = 0;
  int64_t pending = 0;  // delivered, not yet acknowledged
  std::string last_delivered_id;
  std::optional<int64_t> entries_read;  // nil when Redis cannot tell (after XDEL/trim/XSETID)
  std::optional<int64_t> lag;           // entries not yet delivered; nil when unknown
};

// BLPOP's reply when it popped something.
struct PoppedValue {
  std::string key;
  std::string value;
};

// INFO [section ...]: every "key:value" line. Section headers and blank lines are skipped.
class RedisInfo {
 public:
  static RedisInfo parse(std::string_view text);

  std::optional<std::string_view> get(std::string_view key) const;
  // The value as a number ("used_memory", "used_cpu_sys", "maxmemory"); nullopt when absent or
  // not a number.
  std::optional<double> number(std::string_view key) const;
  const std::map<std::string, std::string, std::less<>>& fields() const { return fields_; }

 private:
  std::map<std::string, std::string, std::less<>> fields_;
};

// +OK (XGROUP CREATE, SET ...).
RedisResult<bool> parse_ok(const RespValue& v);
RedisResult<int64_t> parse_integer(const RespValue& v);
// A bulk string (XADD's new id).
RedisResult<std::string> parse_string(const RespValue& v);
// An array of bulk strings (XCLAIM JUSTID, LPOP with a count); nil is an empty list.
RedisResult<std::vector<std::string>> parse_string_array(const RespValue& v);
// [[id, [field, value, ...] | nil], ...]
RedisResult<std::vector<StreamEntry>> parse_stream_entries(const RespValue& v);
// XREADGROUP / XREAD: [[stream, entries], ...] or nil (nothing new, or BLOCK timed out). The
// entries of every stream in the reply, in reply order.
RedisResult<std::vector<StreamEntry>> parse_xreadgroup(const RespValue& v);
RedisResult<AutoClaimResult> parse_xautoclaim(const RespValue& v, bool justid);
RedisResult<PendingSummary> parse_xpending_summary(const RespValue& v);
RedisResult<std::vector<PendingEntry>> parse_xpending_entries(const RespValue& v);
RedisResult<std::vector<GroupInfo>> parse_xinfo_groups(const RespValue& v);
// BLPOP / BRPOP: [key, value], or nil when the timeout passed.
RedisResult<std::optional<PoppedValue>> parse_blpop(const RespValue& v);
RedisResult<RedisInfo> parse_info(const RespValue& v);

}  // namespace sluice::queue
