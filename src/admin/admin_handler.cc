#include "src/admin/admin_handler.h"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <charconv>
#include <chrono>
#include <exception>
#include <optional>
#include <regex>
#include <utility>
#include <vector>

#include "src/admin/dashboard_page.h"
#include "src/admin/history_render.h"
#include "src/admin/json_pretty.h"
#include "src/admin/limits_render.h"
#include "src/admin/prometheus_render.h"
#include "src/admin/queue_mode_state.h"
#include "src/admin/queues_render.h"
#include "src/admin/stats_render.h"

namespace sluice {

namespace http = boost::beast::http;

namespace {

constexpr const char* kText = "text/plain; charset=utf-8";
constexpr const char* kJson = "application/json";
constexpr const char* kHtml = "text/html; charset=utf-8";
constexpr const char* kPrometheus = "text/plain; version=0.0.4; charset=utf-8";

HttpResponse respond(const HttpRequest& req, http::status status, const char* content_type,
                     std::string body) {
  HttpResponse res{status, req.version()};
  res.set(http::field::server, "sluice/" SLUICE_VERSION);
  res.set(http::field::content_type, content_type);
  // The dashboard polls; a cached answer would freeze its charts.
  res.set(http::field::cache_control, "no-store");
  res.set("X-Content-Type-Options", "nosniff");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// application/x-www-form-urlencoded decoding; nullopt on a malformed escape.
std::optional<std::string> url_decode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out += ' ';
    } else if (in[i] == '%') {
      if (i + 2 >= in.size()) return std::nullopt;
      const int hi = hex_value(in[i + 1]);
      const int lo = hex_value(in[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += in[i];
    }
  }
  return out;
}

// The decoded value of query parameter `key` ("" if present without a value); nullopt when the
// parameter is absent. A malformed escape makes `bad` true.
std::optional<std::string> query_param(const std::string& query, std::string_view key, bool& bad) {
  std::string_view rest = query;
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    const auto eq = pair.find('=');
    auto name = url_decode(pair.substr(0, eq));
    if (!name) {
      bad = true;
      return std::nullopt;
    }
    if (*name != key) continue;
    if (eq == std::string_view::npos) return std::string();
    auto value = url_decode(pair.substr(eq + 1));
    if (!value) bad = true;
    return value;
  }
  return std::nullopt;
}

// Keeps the stats whose dotted name matches `filter` (a search, as in Envoy's ?filter=).
// Returns a 400 message for an invalid regex or query.
std::optional<std::string> apply_filter(const std::string& query, std::vector<StatValue>& stats) {
  bool bad = false;
  const auto filter = query_param(query, "filter", bad);
  if (bad) return "malformed query string";
  if (!filter || filter->empty()) return std::nullopt;
  std::regex re;
  try {
    re = std::regex(*filter, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return "invalid filter regex '" + *filter + "': " + e.what();
  }
  std::erase_if(stats,
                [&re](const StatValue& s) { return !std::regex_search(s.name.dotted(), re); });
  return std::nullopt;
}

boost::json::object reload_json(const ReloadResult& r) {
  boost::json::object o;
  o["ok"] = r.ok;
  o["trigger"] = r.trigger;
  o["at"] = iso8601(r.at);
  o["version"] = r.version;
  if (r.ok) {
    boost::json::array changes;
    for (const std::string& c : r.changes) changes.emplace_back(c);
    o["changes"] = std::move(changes);
  } else {
    o["needs_restart"] = r.needs_restart;
    o["error"] = r.error;
  }
  return o;
}

}  // namespace

const AdminHandler::Route AdminHandler::kRoutes[] = {
    {"/", Methods::Read, &AdminHandler::dashboard},
    {"/stats", Methods::Read, &AdminHandler::stats},
    {"/stats/prometheus", Methods::Read, &AdminHandler::prometheus},
    {"/limits", Methods::Read, &AdminHandler::limits},
    {"/queues", Methods::Read, &AdminHandler::queues},
    {"/history", Methods::Read, &AdminHandler::history},
    {"/config_dump", Methods::Read, &AdminHandler::config_dump},
    {"/ready", Methods::Read, &AdminHandler::ready},
    {"/server_info", Methods::Read, &AdminHandler::server_info},
    {"/healthcheck/fail", Methods::Mutate, &AdminHandler::healthcheck_fail},
    {"/healthcheck/ok", Methods::Mutate, &AdminHandler::healthcheck_ok},
    {"/drain", Methods::Mutate, &AdminHandler::drain},
    {"/config/reload", Methods::Mutate, &AdminHandler::config_reload},
};

AdminHandler::AdminHandler(StatsRegistry& stats, AdminHooks& hooks, const HistorySampler& history,
                           const Clock& clock)
    : stats_(stats), hooks_(hooks), history_(history), clock_(clock) {}

std::string AdminHandler::state() const {
  if (hooks_.draining()) return "DRAINING";
  if (healthcheck_failed_.load(std::memory_order_relaxed)) return "HEALTHCHECK_FAILED";
  return "LIVE";
}

HttpResponse AdminHandler::handle(const HttpRequest& req) {
  const std::string_view target = req.target();
  const auto qmark = target.find('?');
  const std::string path(target.substr(0, qmark));
  const std::string query(qmark == std::string_view::npos ? std::string_view()
                                                          : target.substr(qmark + 1));
  for (const Route& route : kRoutes) {
    if (path != route.path) continue;
    const bool read = req.method() == http::verb::get || req.method() == http::verb::head;
    const bool mutate = req.method() == http::verb::post;
    if (route.methods == Methods::Read && !read) {
      auto res = respond(req, http::status::method_not_allowed, kText, "use GET or HEAD\n");
      res.set(http::field::allow, "GET, HEAD");
      return res;
    }
    if (route.methods == Methods::Mutate && !mutate) {
      auto res = respond(req, http::status::method_not_allowed, kText, "use POST\n");
      res.set(http::field::allow, "POST");
      return res;
    }
    if (mutate) {
      // A web page the operator has open could otherwise drain the proxy with a cross-site
      // form POST to 127.0.0.1; browsers always send Origin on such requests.
      const auto origin = req[http::field::origin];
      if (!origin.empty() && origin != "http://" + std::string(req[http::field::host])) {
        return respond(req, http::status::forbidden, kText, "cross-origin POST refused\n");
      }
    }
    try {
      return (this->*route.endpoint)(req, query);
    } catch (const std::exception& e) {
      // A hook that throws must not take the admin thread down with it.
      return respond(req, http::status::internal_server_error, kText,
                     std::string("internal error: ") + e.what() + "\n");
    }
  }
  return respond(req, http::status::not_found, kText, "no such admin endpoint: " + path + "\n");
}

HttpResponse AdminHandler::dashboard(const HttpRequest& req, const std::string&) {
  return respond(req, http::status::ok, kHtml, std::string(dashboard_html()));
}

HttpResponse AdminHandler::stats(const HttpRequest& req, const std::string& query) {
  auto snapshot = stats_.snapshot();
  if (auto error = apply_filter(query, snapshot)) {
    return respond(req, http::status::bad_request, kText, *error + "\n");
  }
  bool bad = false;
  const auto format = query_param(query, "format", bad).value_or("text");
  if (format == "json") {
    return respond(req, http::status::ok, kJson, pretty_json(render_stats_json(snapshot)));
  }
  if (format == "prometheus") {
    return respond(req, http::status::ok, kPrometheus, render_prometheus(snapshot));
  }
  if (format != "text") {
    return respond(req, http::status::bad_request, kText,
                   "unknown format '" + format + "' (text, json, prometheus)\n");
  }
  return respond(req, http::status::ok, kText, render_stats_text(snapshot));
}

HttpResponse AdminHandler::prometheus(const HttpRequest& req, const std::string& query) {
  auto snapshot = stats_.snapshot();
  if (auto error = apply_filter(query, snapshot)) {
    return respond(req, http::status::bad_request, kText, *error + "\n");
  }
  return respond(req, http::status::ok, kPrometheus, render_prometheus(snapshot));
}

HttpResponse AdminHandler::limits(const HttpRequest& req, const std::string&) {
  const auto recent = [this](const LimiterSnapshot& l) {
    return history_.recent_queue_wait_p99_ms(l.listener, l.filter);
  };
  return respond(req, http::status::ok, kJson,
                 pretty_json(render_limits_json(hooks_.limits(), clock_.now(),
                                                std::chrono::system_clock::now(), recent)));
}

HttpResponse AdminHandler::queues(const HttpRequest& req, const std::string&) {
  const std::vector<StatValue> stats = stats_.snapshot();
  const std::vector<LimiterSnapshot> limits = hooks_.limits();
  const QueueModeState state = QueueModeState::read(stats, hooks_.config_dump(), limits);
  const HistoryOptions& o = history_.options();
  QueueRecent recent;
  recent.window_s =
      std::chrono::duration<double>(o.interval).count() * static_cast<double>(o.recent_intervals);
  recent.histogram = [this](const std::string& dotted) {
    return history_.recent_histogram(dotted);
  };
  recent.redis_cpu_ratio = [this](const std::string& queue) {
    return history_.recent_redis_cpu_ratio(queue);
  };
  return respond(req, http::status::ok, kJson, pretty_json(render_queues_json(state, recent)));
}

HttpResponse AdminHandler::history(const HttpRequest& req, const std::string& query) {
  bool bad = false;
  const auto since = query_param(query, "since", bad);
  if (bad) return respond(req, http::status::bad_request, kText, "malformed query string\n");
  std::optional<int64_t> since_ms;
  if (since) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(since->data(), since->data() + since->size(), v);
    if (ec != std::errc() || end != since->data() + since->size()) {
      return respond(req, http::status::bad_request, kText,
                     "since must be a Unix time in milliseconds, got '" + *since + "'\n");
    }
    since_ms = v;
  }
  return respond(req, http::status::ok, kJson, render_history_json(history_, since_ms));
}

HttpResponse AdminHandler::config_dump(const HttpRequest& req, const std::string&) {
  return respond(req, http::status::ok, kJson, pretty_json(hooks_.config_dump()));
}

HttpResponse AdminHandler::ready(const HttpRequest& req, const std::string&) {
  const std::string s = state();
  if (s != "LIVE") return respond(req, http::status::service_unavailable, kText, s + "\n");
  // Running, but nothing to send calls to (no healthy upstream): Kubernetes should route
  // elsewhere until that changes.
  std::string body;
  for (const std::string& reason : hooks_.unready_reasons()) body += reason + "\n";
  if (!body.empty()) return respond(req, http::status::service_unavailable, kText, body);
  return respond(req, http::status::ok, kText, s + "\n");
}

HttpResponse AdminHandler::server_info(const HttpRequest& req, const std::string&) {
  const ServerInfo info = hooks_.server_info();
  boost::json::object o;
  o["version"] = info.version;
  o["state"] = state();
  boost::json::array unready;
  for (const std::string& reason : hooks_.unready_reasons()) unready.emplace_back(reason);
  o["unready"] = std::move(unready);
  o["uptime_s"] = std::chrono::duration<double>(clock_.now() - info.started).count();
  o["started"] = iso8601(info.started_wall);
  o["workers"] = info.workers;
  o["config_path"] = info.config_path;
  boost::json::object listeners;
  for (const auto& [name, port] : info.listeners) listeners[name] = port;
  o["listeners"] = std::move(listeners);
  boost::json::object config;
  config["version"] = info.config.version;
  config["loaded_at"] = iso8601(info.config.loaded_at);
  config["last_reload"] = info.config.last_reload
                              ? boost::json::value(reload_json(*info.config.last_reload))
                              : boost::json::value(nullptr);
  o["config"] = std::move(config);
  return respond(req, http::status::ok, kJson, pretty_json(o));
}

HttpResponse AdminHandler::healthcheck_fail(const HttpRequest& req, const std::string&) {
  healthcheck_failed_.store(true, std::memory_order_relaxed);
  return respond(req, http::status::ok, kText, "OK\n");
}

HttpResponse AdminHandler::healthcheck_ok(const HttpRequest& req, const std::string&) {
  healthcheck_failed_.store(false, std::memory_order_relaxed);
  return respond(req, http::status::ok, kText, "OK\n");
}

HttpResponse AdminHandler::config_reload(const HttpRequest& req, const std::string&) {
  const ReloadResult r = hooks_.reload_config();
  const http::status status = r.ok              ? http::status::ok
                              : r.needs_restart ? http::status::conflict
                                                : http::status::bad_request;
  return respond(req, status, kJson, pretty_json(reload_json(r)));
}

HttpResponse AdminHandler::drain(const HttpRequest& req, const std::string&) {
  hooks_.start_drain();
  return respond(req, http::status::ok, kText, "OK: draining\n");
}

}  // namespace sluice
