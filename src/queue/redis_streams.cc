#include "src/queue/redis_streams.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <utility>

#include "src/config/config.h"

namespace sluice::queue {

RedisConnection::Options redis_options(const QueueConfig& queue, std::string client_name) {
  RedisConnection::Options o;
  o.host = queue.redis.host;
  o.port = queue.redis.port;
  o.client_name = std::move(client_name);
  return o;
}

namespace {

// Adapts a typed callback to the connection's: transport and server errors pass through,
// values go through `parse`.
template <typename T, typename Parse>
RedisConnection::Callback typed(RedisStreams::Callback<T> cb, Parse parse) {
  return [cb = std::move(cb), parse](RedisResult<RespValue> r) {
    if (!r) {
      cb(r.error());
      return;
    }
    cb(parse(*r));
  };
}

RedisCommand with_ids(RedisCommand cmd, const std::vector<std::string>& ids) {
  for (const std::string& id : ids) cmd.arg(id);
  return cmd;
}

// An EXEC reply's element, or the error it holds.
RedisResult<RespValue> exec_element(const RespValue& exec, std::size_t i, std::size_t expected) {
  if (!exec.is_array() || exec.elements().size() != expected) {
    return RedisError{RedisErrorKind::BadReply, "EXEC: expected " + std::to_string(expected) +
                                                    " replies, got " + exec.debug_string()};
  }
  const RespValue& e = exec.elements()[i];
  if (e.is_error()) return RedisError{RedisErrorKind::Server, e.str()};
  return e;
}

}  // namespace

int64_t redis_ms(Duration d) {
  if (d <= Duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
  return ms;
}

RedisStreams::RedisStreams(std::shared_ptr<RedisConnection> connection)
    : connection_(std::move(connection)) {}

template <typename T>
void RedisStreams::fail_later(Callback<T> cb, std::string message) {
  boost::asio::post(connection_->io(), [cb = std::move(cb), message = std::move(message)] {
    cb(RedisError{RedisErrorKind::BadArgument, message});
  });
}

void RedisStreams::create_group(std::string_view stream, std::string_view group,
                                std::string_view start_id, Callback<bool> cb) {
  RedisCommand cmd("XGROUP");
  cmd.arg("CREATE").arg(stream).arg(group).arg(start_id).arg("MKSTREAM");
  connection_->send(cmd, [cb = std::move(cb)](RedisResult<RespValue> r) {
    if (!r) {
      if (r.error().is_server("BUSYGROUP")) {
        cb(false);
      } else {
        cb(r.error());
      }
      return;
    }
    auto ok = parse_ok(*r);
    if (!ok) {
      cb(ok.error());
      return;
    }
    cb(true);
  });
}

RedisCommand RedisStreams::xadd_command(std::string_view stream, const StreamFields& fields,
                                        std::optional<uint64_t> max_len_approx) {
  RedisCommand cmd("XADD");
  cmd.arg(stream);
  if (max_len_approx) cmd.arg("MAXLEN").arg("~").arg(*max_len_approx);
  cmd.arg("*");
  for (const auto& [name, value] : fields) cmd.arg(name).arg(value);
  return cmd;
}

void RedisStreams::xadd(std::string_view stream, const StreamFields& fields,
                        std::optional<uint64_t> max_len_approx, Callback<std::string> cb) {
  if (fields.empty()) {
    fail_later(std::move(cb), "XADD needs at least one field");
    return;
  }
  connection_->send(xadd_command(stream, fields, max_len_approx),
                    typed<std::string>(std::move(cb), parse_string));
}

RedisCommand RedisStreams::xreadgroup_command(const ReadGroupArgs& args) {
  RedisCommand cmd("XREADGROUP");
  cmd.arg("GROUP").arg(args.group).arg(args.consumer).arg("COUNT").arg(args.count);
  if (args.block > Duration::zero()) cmd.arg("BLOCK").arg(redis_ms(args.block));
  cmd.arg("STREAMS").arg(args.stream).arg(args.id);
  return cmd;
}

void RedisStreams::xreadgroup(const ReadGroupArgs& args, Callback<std::vector<StreamEntry>> cb) {
  if (args.count == 0) {
    // COUNT 0 is "no limit" to Redis: a consumer with no free permit must not read at all.
    fail_later(std::move(cb), "XREADGROUP COUNT must be at least 1");
    return;
  }
  Duration timeout = connection_->options().command_timeout;
  if (args.block > Duration::zero() && timeout > Duration::zero()) timeout += args.block;
  connection_->send(xreadgroup_command(args), timeout,
                    typed<std::vector<StreamEntry>>(std::move(cb), parse_xreadgroup));
}

void RedisStreams::xack(std::string_view stream, std::string_view group,
                        const std::vector<std::string>& ids, Callback<int64_t> cb) {
  if (ids.empty()) {
    fail_later(std::move(cb), "XACK needs at least one id");
    return;
  }
  RedisCommand cmd("XACK");
  cmd.arg(stream).arg(group);
  connection_->send(with_ids(std::move(cmd), ids), typed<int64_t>(std::move(cb), parse_integer));
}

void RedisStreams::xdel(std::string_view stream, const std::vector<std::string>& ids,
                        Callback<int64_t> cb) {
  if (ids.empty()) {
    fail_later(std::move(cb), "XDEL needs at least one id");
    return;
  }
  RedisCommand cmd("XDEL");
  cmd.arg(stream);
  connection_->send(with_ids(std::move(cmd), ids), typed<int64_t>(std::move(cb), parse_integer));
}

void RedisStreams::ack_and_delete(std::string_view stream, std::string_view group,
                                  const std::vector<std::string>& ids, Callback<int64_t> cb) {
  if (ids.empty()) {
    fail_later(std::move(cb), "XACK needs at least one id");
    return;
  }
  RedisCommand ack("XACK");
  ack.arg(stream).arg(group);
  RedisCommand del("XDEL");
  del.arg(stream);
  // Both in the same write; XDEL's outcome only matters for memory, XACK's is the result.
  connection_->send(with_ids(std::move(ack), ids), typed<int64_t>(std::move(cb), parse_integer));
  connection_->send(with_ids(std::move(del), ids), [](const RedisResult<RespValue>&) {});
}

RedisCommand RedisStreams::xautoclaim_command(std::string_view stream, std::string_view group,
                                              std::string_view consumer, Duration min_idle,
                                              std::string_view start, uint64_t count, bool justid) {
  RedisCommand cmd("XAUTOCLAIM");
  cmd.arg(stream).arg(group).arg(consumer).arg(redis_ms(min_idle)).arg(start);
  cmd.arg("COUNT").arg(count);
  if (justid) cmd.arg("JUSTID");
  return cmd;
}

void RedisStreams::xautoclaim(std::string_view stream, std::string_view group,
                              std::string_view consumer, Duration min_idle, std::string_view start,
                              uint64_t count, bool justid, Callback<AutoClaimResult> cb) {
  if (count == 0) {
    fail_later(std::move(cb), "XAUTOCLAIM COUNT must be at least 1");
    return;
  }
  connection_->send(xautoclaim_command(stream, group, consumer, min_idle, start, count, justid),
                    typed<AutoClaimResult>(std::move(cb), [justid](const RespValue& v) {
                      return parse_xautoclaim(v, justid);
                    }));
}

void RedisStreams::xclaim_justid(std::string_view stream, std::string_view group,
                                 std::string_view consumer, Duration min_idle,
                                 const std::vector<std::string>& ids,
                                 Callback<std::vector<std::string>> cb) {
  if (ids.empty()) {
    fail_later(std::move(cb), "XCLAIM needs at least one id");
    return;
  }
  RedisCommand cmd("XCLAIM");
  cmd.arg(stream).arg(group).arg(consumer).arg(redis_ms(min_idle));
  cmd = with_ids(std::move(cmd), ids);
  cmd.arg("JUSTID");
  connection_->send(cmd, typed<std::vector<std::string>>(std::move(cb), parse_string_array));
}

void RedisStreams::xclaim(std::string_view stream, std::string_view group,
                          std::string_view consumer, Duration min_idle,
                          const std::vector<std::string>& ids,
                          Callback<std::vector<StreamEntry>> cb) {
  if (ids.empty()) {
    fail_later(std::move(cb), "XCLAIM needs at least one id");
    return;
  }
  RedisCommand cmd("XCLAIM");
  cmd.arg(stream).arg(group).arg(consumer).arg(redis_ms(min_idle));
  connection_->send(with_ids(std::move(cmd), ids),
                    typed<std::vector<StreamEntry>>(std::move(cb), parse_stream_entries));
}

void RedisStreams::xpending_summary(std::string_view stream, std::string_view group,
                                    Callback<PendingSummary> cb) {
  RedisCommand cmd("XPENDING");
  cmd.arg(stream).arg(group);
  connection_->send(cmd, typed<PendingSummary>(std::move(cb), parse_xpending_summary));
}

RedisCommand RedisStreams::xpending_command(std::string_view stream, std::string_view group,
                                            const PendingQuery& query) {
  RedisCommand cmd("XPENDING");
  cmd.arg(stream).arg(group);
  if (query.min_idle > Duration::zero()) cmd.arg("IDLE").arg(redis_ms(query.min_idle));
  cmd.arg(query.start).arg(query.end).arg(query.count);
  if (!query.consumer.empty()) cmd.arg(query.consumer);
  return cmd;
}

void RedisStreams::xpending(std::string_view stream, std::string_view group,
                            const PendingQuery& query, Callback<std::vector<PendingEntry>> cb) {
  if (query.count == 0) {
    fail_later(std::move(cb), "XPENDING count must be at least 1");
    return;
  }
  connection_->send(xpending_command(stream, group, query),
                    typed<std::vector<PendingEntry>>(std::move(cb), parse_xpending_entries));
}

void RedisStreams::xlen(std::string_view stream, Callback<int64_t> cb) {
  connection_->send(RedisCommand("XLEN").arg(stream), typed<int64_t>(std::move(cb), parse_integer));
}

void RedisStreams::xinfo_groups(std::string_view stream, Callback<std::vector<GroupInfo>> cb) {
  RedisCommand cmd("XINFO");
  cmd.arg("GROUPS").arg(stream);
  connection_->send(cmd, typed<std::vector<GroupInfo>>(std::move(cb), parse_xinfo_groups));
}

void RedisStreams::group_backlog(std::string_view stream, std::string_view group,
                                 Callback<GroupBacklog> cb) {
  // Both commands leave in one write and their replies come back in order: XLEN's callback
  // runs right after XINFO's, so the two describe the same moment (give or take the commands
  // other clients ran between them).
  auto info = std::make_shared<std::optional<RedisResult<std::vector<GroupInfo>>>>();
  xinfo_groups(stream,
               [info](RedisResult<std::vector<GroupInfo>> r) { info->emplace(std::move(r)); });
  xlen(stream, [info, group = std::string(group), cb = std::move(cb)](RedisResult<int64_t> len) {
    if (!info->has_value()) {
      cb(RedisError{RedisErrorKind::BadReply, "XINFO GROUPS was not answered before XLEN"});
      return;
    }
    RedisResult<std::vector<GroupInfo>>& groups = **info;
    if (!groups) {
      cb(groups.error());
      return;
    }
    for (const GroupInfo& g : *groups) {
      if (g.name != group) continue;
      GroupBacklog b;
      b.pending = g.pending;
      b.consumers = g.consumers;
      b.entries_read = g.entries_read;
      if (len) b.length = *len;
      if (g.lag) {
        b.backlog = *g.lag;
      } else if (len) {
        b.backlog = std::max<int64_t>(0, *len - g.pending);
      } else {
        cb(len.error());
        return;
      }
      cb(b);
      return;
    }
    cb(RedisError{RedisErrorKind::Server, "NOGROUP no group '" + group + "' on the stream"});
  });
}

void RedisStreams::dead_letter(std::string_view stream, std::string_view group,
                               std::string_view dead_stream, const StreamEntry& entry,
                               std::string_view reason, std::optional<uint64_t> max_len_approx,
                               Callback<std::string> cb) {
  StreamFields fields = entry.fields;
  fields.emplace_back("dead_from", entry.id);
  fields.emplace_back("dead_reason", reason);
  std::vector<RedisCommand> commands;
  commands.push_back(xadd_command(dead_stream, fields, max_len_approx));
  commands.push_back(RedisCommand("XACK").arg(stream).arg(group).arg(entry.id));
  commands.push_back(RedisCommand("XDEL").arg(stream).arg(entry.id));
  connection_->send_transaction(commands, [cb = std::move(cb)](RedisResult<RespValue> r) {
    if (!r) {
      cb(r.error());
      return;
    }
    for (std::size_t i = 1; i < 3; ++i) {
      auto e = exec_element(*r, i, 3);
      if (!e) {
        cb(e.error());
        return;
      }
    }
    auto id = exec_element(*r, 0, 3);
    if (!id) {
      cb(id.error());
      return;
    }
    cb(parse_string(*id));
  });
}

void RedisStreams::push_reply(std::string_view key, std::string_view value, Duration ttl,
                              Callback<int64_t> cb) {
  if (ttl <= Duration::zero()) {
    fail_later(std::move(cb), "reply TTL must be positive");
    return;
  }
  std::vector<RedisCommand> commands;
  commands.push_back(RedisCommand("RPUSH").arg(key).arg(value));
  commands.push_back(RedisCommand("PEXPIRE").arg(key).arg(redis_ms(ttl)));
  connection_->send_transaction(commands, [cb = std::move(cb)](RedisResult<RespValue> r) {
    if (!r) {
      cb(r.error());
      return;
    }
    auto expire = exec_element(*r, 1, 2);
    if (!expire) {
      cb(expire.error());
      return;
    }
    auto len = exec_element(*r, 0, 2);
    if (!len) {
      cb(len.error());
      return;
    }
    cb(parse_integer(*len));
  });
}

RedisCommand RedisStreams::blpop_command(std::string_view key, Duration timeout) {
  // BLPOP takes seconds, fractional since Redis 6.0; whole milliseconds, rounded up.
  const int64_t ms = redis_ms(timeout);
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%lld.%03lld", static_cast<long long>(ms / 1000),
                static_cast<long long>(ms % 1000));
  return RedisCommand("BLPOP").arg(key).arg(seconds);
}

void RedisStreams::blpop(std::string_view key, Duration timeout,
                         Callback<std::optional<PoppedValue>> cb) {
  if (timeout <= Duration::zero()) {
    fail_later(std::move(cb), "BLPOP timeout must be positive");
    return;
  }
  Duration command_timeout = connection_->options().command_timeout;
  if (command_timeout > Duration::zero()) command_timeout += timeout;
  connection_->send(blpop_command(key, timeout), command_timeout,
                    typed<std::optional<PoppedValue>>(std::move(cb), parse_blpop));
}

void RedisStreams::lpop(std::string_view key, uint64_t count,
                        Callback<std::vector<std::string>> cb) {
  if (count == 0) {
    fail_later(std::move(cb), "LPOP count must be at least 1");
    return;
  }
  connection_->send(RedisCommand("LPOP").arg(key).arg(count),
                    typed<std::vector<std::string>>(std::move(cb), parse_string_array));
}

void RedisStreams::info(const std::vector<std::string>& sections, Callback<RedisInfo> cb) {
  RedisCommand cmd("INFO");
  for (const std::string& s : sections) cmd.arg(s);
  connection_->send(cmd, typed<RedisInfo>(std::move(cb), parse_info));
}

}  // namespace sluice::queue
