#include "src/queue/redis_replies.h"

#include <charconv>
#include <cstdlib>

namespace sluice::queue {

namespace {

RedisError bad(std::string what, const RespValue& v) {
  std::string s = v.debug_string();
  if (s.size() > 120) s = s.substr(0, 120) + "...";
  return RedisError{RedisErrorKind::BadReply, std::move(what) + ", got " + s};
}

bool parse_i64(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

RedisResult<StreamEntry> parse_entry(const RespValue& v) {
  if (!v.is_array() || v.elements().size() != 2 || !v.elements()[0].is_string()) {
    return bad("stream entry: expected [id, fields]", v);
  }
  StreamEntry e;
  e.id = v.elements()[0].str();
  const RespValue& fields = v.elements()[1];
  if (fields.is_null()) {
    e.deleted = true;
    return e;
  }
  if (!fields.is_array() || fields.elements().size() % 2 != 0) {
    return bad("stream entry " + e.id + ": expected an even field list", fields);
  }
  e.fields.reserve(fields.elements().size() / 2);
  for (std::size_t i = 0; i < fields.elements().size(); i += 2) {
    const RespValue& name = fields.elements()[i];
    const RespValue& value = fields.elements()[i + 1];
    if (!name.is_string() || !value.is_string()) {
      return bad("stream entry " + e.id + ": expected string fields", fields);
    }
    e.fields.emplace_back(name.str(), value.str());
  }
  return e;
}

}  // namespace

RedisInfo RedisInfo::parse(std::string_view text) {
  RedisInfo info;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    info.fields_.insert_or_assign(std::string(line.substr(0, colon)),
                                  std::string(line.substr(colon + 1)));
  }
  return info;
}

std::optional<std::string_view> RedisInfo::get(std::string_view key) const {
  const auto it = fields_.find(key);
  if (it == fields_.end()) return std::nullopt;
  return std::string_view(it->second);
}

std::optional<double> RedisInfo::number(std::string_view key) const {
  const auto v = get(key);
  if (!v || v->empty()) return std::nullopt;
  // strtod needs a terminated string; INFO values are short.
  const std::string s(*v);
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return d;
}

RedisResult<bool> parse_ok(const RespValue& v) {
  if (v.type() != RespValue::Type::SimpleString || v.str() != "OK") return bad("expected OK", v);
  return true;
}

RedisResult<int64_t> parse_integer(const RespValue& v) {
  if (!v.is_integer()) return bad("expected an integer", v);
  return v.integer();
}

RedisResult<std::string> parse_string(const RespValue& v) {
  if (!v.is_string()) return bad("expected a string", v);
  return v.str();
}

RedisResult<std::vector<std::string>> parse_string_array(const RespValue& v) {
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (!v.is_array()) return bad("expected an array of strings", v);
  out.reserve(v.elements().size());
  for (const RespValue& e : v.elements()) {
    if (!e.is_string()) return bad("expected an array of strings", v);
    out.push_back(e.str());
  }
  return out;
}

RedisResult<std::vector<StreamEntry>> parse_stream_entries(const RespValue& v) {
  if (!v.is_array()) return bad("expected an array of stream entries", v);
  std::vector<StreamEntry> out;
  out.reserve(v.elements().size());
  for (const RespValue& e : v.elements()) {
    auto entry = parse_entry(e);
    if (!entry) return entry.error();
    out.push_back(std::move(*entry));
  }
  return out;
}

RedisResult<std::vector<StreamEntry>> parse_xreadgroup(const RespValue& v) {
  std::vector<StreamEntry> out;
  if (v.is_null()) return out;
  if (!v.is_array()) return bad("XREADGROUP: expected an array of streams", v);
  for (const RespValue& stream : v.elements()) {
    if (!stream.is_array() || stream.elements().size() != 2 || !stream.elements()[0].is_string()) {
      return bad("XREADGROUP: expected [stream, entries]", stream);
    }
    auto entries = parse_stream_entries(stream.elements()[1]);
    if (!entries) return entries.error();
    if (out.empty()) {
      out = std::move(*entries);
    } else {
      for (StreamEntry& e : *entries) out.push_back(std::move(e));
    }
  }
  return out;
}

RedisResult<AutoClaimResult> parse_xautoclaim(const RespValue& v, bool justid) {
  // Redis 6.2 sent two elements; sluice needs 7.0's third (the deleted ids), and says so.
  if (!v.is_array() || v.elements().size() != 3 || !v.elements()[0].is_string()) {
    return bad("XAUTOCLAIM: expected [cursor, entries, deleted ids] (Redis >= 7.0)", v);
  }
  AutoClaimResult r;
  r.next_cursor = v.elements()[0].str();
  if (justid) {
    auto ids = parse_string_array(v.elements()[1]);
    if (!ids) return ids.error();
    r.entries.reserve(ids->size());
    for (std::string& id : *ids) r.entries.push_back(StreamEntry{std::move(id), {}, false});
  } else {
    auto entries = parse_stream_entries(v.elements()[1]);
    if (!entries) return entries.error();
    r.entries = std::move(*entries);
  }
  auto deleted = parse_string_array(v.elements()[2]);
  if (!deleted) return deleted.error();
  r.deleted_ids = std::move(*deleted);
  return r;
}

RedisResult<PendingSummary> parse_xpending_summary(const RespValue& v) {
  if (!v.is_array() || v.elements().size() != 4 || !v.elements()[0].is_integer()) {
    return bad("XPENDING: expected [count, min, max, consumers]", v);
  }
  const auto& e = v.elements();
  PendingSummary s;
  s.count = e[0].integer();
  if (!e[1].is_null()) {
    if (!e[1].is_string() || !e[2].is_string()) return bad("XPENDING: expected ids", v);
    s.min_id = e[1].str();
    s.max_id = e[2].str();
  }
  if (e[3].is_null()) return s;
  if (!e[3].is_array()) return bad("XPENDING: expected a consumer list", v);
  for (const RespValue& c : e[3].elements()) {
    // The per-consumer count comes as a bulk string, not an integer.
    int64_t n = 0;
    if (!c.is_array() || c.elements().size() != 2 || !c.elements()[0].is_string() ||
        !c.elements()[1].is_string() || !parse_i64(c.elements()[1].str(), n)) {
      return bad("XPENDING: expected [consumer, count]", c);
    }
    s.consumers.emplace_back(c.elements()[0].str(), n);
  }
  return s;
}

RedisResult<std::vector<PendingEntry>> parse_xpending_entries(const RespValue& v) {
  if (!v.is_array()) return bad("XPENDING: expected an array of pending entries", v);
  std::vector<PendingEntry> out;
  out.reserve(v.elements().size());
  for (const RespValue& row : v.elements()) {
    const auto& e = row.elements();
    if (!row.is_array() || e.size() != 4 || !e[0].is_string() || !e[1].is_string() ||
        !e[2].is_integer() || !e[3].is_integer()) {
      return bad("XPENDING: expected [id, consumer, idle, deliveries]", row);
    }
    out.push_back(PendingEntry{e[0].str(), e[1].str(), e[2].integer(), e[3].integer()});
  }
  return out;
}

RedisResult<std::vector<GroupInfo>> parse_xinfo_groups(const RespValue& v) {
  if (!v.is_array()) return bad("XINFO GROUPS: expected an array of groups", v);
  std::vector<GroupInfo> out;
  for (const RespValue& group : v.elements()) {
    if (!group.is_array() || group.elements().size() % 2 != 0) {
      return bad("XINFO GROUPS: expected a flat key-value list", group);
    }
    GroupInfo g;
    const auto& e = group.elements();
    for (std::size_t i = 0; i < e.size(); i += 2) {
      if (!e[i].is_string()) return bad("XINFO GROUPS: expected a key", group);
      const std::string& key = e[i].str();
      const RespValue& val = e[i + 1];
      // Unknown keys are skipped: later Redis versions add fields.
      if (key == "name" && val.is_string()) {
        g.name = val.str();
      } else if (key == "consumers" && val.is_integer()) {
        g.consumers = val.integer();
      } else if (key == "pending" && val.is_integer()) {
        g.pending = val.integer();
      } else if (key == "last-delivered-id" && val.is_string()) {
        g.last_delivered_id = val.str();
      } else if (key == "entries-read" && val.is_integer()) {
        g.entries_read = val.integer();
      } else if (key == "lag" && val.is_integer()) {
        g.lag = val.integer();
      }
    }
    if (g.name.empty()) return bad("XINFO GROUPS: group without a name", group);
    out.push_back(std::move(g));
  }
  return out;
}

RedisResult<std::optional<PoppedValue>> parse_blpop(const RespValue& v) {
  if (v.is_null()) return std::optional<PoppedValue>();
  if (!v.is_array() || v.elements().size() != 2 || !v.elements()[0].is_string() ||
      !v.elements()[1].is_string()) {
    return bad("BLPOP: expected [key, value]", v);
  }
  return std::optional<PoppedValue>(PoppedValue{v.elements()[0].str(), v.elements()[1].str()});
}

RedisResult<RedisInfo> parse_info(const RespValue& v) {
  if (!v.is_string()) return bad("INFO: expected a bulk string", v);
  return RedisInfo::parse(v.str());
}

}  // namespace sluice::queue
