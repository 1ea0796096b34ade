// End-to-end tests of the admin server: a real listener on an ephemeral port, a fake proxy
// behind AdminHooks, and an HTTP/1.1 client written with Beast.
#include "src/admin/admin_server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/admin/fake_admin_hooks.h"
#include "tests/admin/prometheus_parser.h"

namespace sluice {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;
using namespace std::chrono_literals;

using Response = http::response<http::string_body>;

// One HTTP/1.1 connection to the admin server.
class Client {
 public:
  explicit Client(uint16_t port) : socket_(io_) {
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    // A hang guard only (a broken server must fail the test, not stall it), not a timing check.
    timeval tv{10, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }

  Response send(http::verb method, const std::string& target,
                std::vector<std::pair<std::string, std::string>> headers = {},
                bool keep_alive = true) {
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.keep_alive(keep_alive);
    req.prepare_payload();
    http::write(socket_, req);
    return read(method == http::verb::head);
  }

  Response read(bool head = false) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(16 * 1024 * 1024);
    parser.skip(head);  // a response to HEAD has headers only
    http::read(socket_, buffer_, parser);
    return parser.release();
  }

  void write_raw(const std::string& bytes) { asio::write(socket_, asio::buffer(bytes)); }

  // True when the server closed the connection (EOF on the next read).
  bool closed_by_server() {
    char byte;
    boost::system::error_code ec;
    socket_.read_some(asio::buffer(&byte, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }

 private:
  asio::io_context io_;
  tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

class AdminServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.counter(StatName{"listener", {{"listener", "ingress"}}, "rq_total"}, "Requests")
        .inc(5);
    registry_
        .gauge(StatName{"filter", {{"listener", "ingress"}, {"filter", "vegas"}}, "limit"}, "Limit")
        .set(20);
    Histogram& h = registry_.histogram(
        StatName{"filter", {{"listener", "ingress"}, {"filter", "vegas"}}, "queue_wait_us"},
        "Queue wait", "us");
    for (uint64_t v = 1; v <= 100; ++v) h.record(v * 10);

    LimiterSnapshot vegas;
    vegas.listener = "ingress";
    vegas.filter = "vegas";
    vegas.type = "rtt_gradient";
    vegas.limit = 20;
    vegas.in_flight = 3;
    vegas.queued = 1;
    vegas.admitted = 500;
    vegas.shed = 4;
    vegas.rtt_noload_ms = 1.5;
    vegas.rtt_smoothed_ms = 2.25;
    vegas.gradient = 0.75;
    vegas.recent_decisions.push_back({SteadyClock::now() - 1500ms, 25, 20, "gradient 0.6"});
    hooks_.set_limits({vegas});

    AdminConfig config;
    config.address = SocketAddress{"127.0.0.1", 0};
    // A fast history so its tests need not wait seconds; nothing else depends on the interval.
    server_ =
        std::make_unique<AdminServer>(config, registry_, hooks_, HistoryOptions{20ms, 600, 10});
    server_->start();
  }
  void TearDown() override { server_->stop(); }

  Response get(const std::string& target) { return Client(port()).send(http::verb::get, target); }
  Response post(const std::string& target) { return Client(port()).send(http::verb::post, target); }
  uint16_t port() const { return server_->bound_port(); }

  StatsRegistry registry_;
  FakeAdminHooks hooks_;
  std::unique_ptr<AdminServer> server_;
};

TEST_F(AdminServerTest, BindsAnEphemeralPort) { EXPECT_NE(port(), 0); }

TEST_F(AdminServerTest, StartThrowsNamingTheAddressWhenThePortIsTaken) {
  AdminConfig config;
  config.address = SocketAddress{"127.0.0.1", port()};
  AdminServer second(config, registry_, hooks_);
  try {
    second.start();
    FAIL() << "expected bind to fail";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port())), std::string::npos)
        << e.what();
  }
}

TEST_F(AdminServerTest, StatsListsEveryStatAsNameColonValue) {
  const Response res = get("/stats");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "text/plain; charset=utf-8");
  EXPECT_EQ(res.body(),
            "filter.ingress.vegas.limit: 20\n"
            "filter.ingress.vegas.queue_wait_us: P50=511 P90=927 P99=991 P99.9=1000 max=1000 "
            "count=100\n"
            "listener.ingress.rq_total: 5\n");
}

TEST_F(AdminServerTest, StatsFilterKeepsNamesMatchingTheRegex) {
  EXPECT_EQ(get("/stats?filter=rq_total").body(), "listener.ingress.rq_total: 5\n");
  // URL-encoded "^filter\..*limit$"
  EXPECT_EQ(get("/stats?filter=%5Efilter%5C..*limit%24").body(),
            "filter.ingress.vegas.limit: 20\n");
  EXPECT_EQ(get("/stats?filter=nomatch").body(), "");
}

TEST_F(AdminServerTest, InvalidFilterRegexIsABadRequest) {
  const Response res = get("/stats?filter=%28unclosed");
  EXPECT_EQ(res.result(), http::status::bad_request);
  EXPECT_NE(res.body().find("regex"), std::string::npos) << res.body();
  EXPECT_EQ(get("/stats/prometheus?filter=%5B").result(), http::status::bad_request);
}

TEST_F(AdminServerTest, MalformedQueryEscapeIsABadRequest) {
  EXPECT_EQ(get("/stats?filter=%zz").result(), http::status::bad_request);
}

TEST_F(AdminServerTest, StatsJsonListsEveryStat) {
  const Response res = get("/stats?format=json");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  const auto stats = boost::json::parse(res.body()).at("stats").as_array();
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[1].at("name").as_string(), "filter.ingress.vegas.queue_wait_us");
  EXPECT_EQ(stats[1].at("count").to_number<uint64_t>(), 100u);
  EXPECT_EQ(stats[2].at("value").as_int64(), 5);
}

TEST_F(AdminServerTest, StatsJsonHonoursTheFilter) {
  const auto stats =
      boost::json::parse(get("/stats?format=json&filter=limit").body()).at("stats").as_array();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].at("leaf").as_string(), "limit");
}

TEST_F(AdminServerTest, UnknownStatsFormatIsABadRequest) {
  EXPECT_EQ(get("/stats?format=xml").result(), http::status::bad_request);
}

TEST_F(AdminServerTest, PrometheusOutputPassesTheStrictParser) {
  const Response res = get("/stats/prometheus");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  std::vector<PromFamily> families;
  ASSERT_NO_THROW(families = PrometheusParser::parse(res.body())) << res.body();
  EXPECT_EQ(PrometheusParser::value(families, "sluice_listener_rq_total"), 5.0);
  EXPECT_EQ(PrometheusParser::value(families, "sluice_filter_queue_wait_seconds_count"), 100.0);
  EXPECT_EQ(PrometheusParser::value(families, "sluice_filter_limit",
                                    {{"listener", "ingress"}, {"filter", "vegas"}}),
            20.0);
  // Same output through /stats?format=prometheus.
  EXPECT_EQ(get("/stats?format=prometheus").body(), res.body());
}

TEST_F(AdminServerTest, LimitsShowsEveryLimiterFieldWithDecisionTimes) {
  const Response res = get("/limits");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  const auto limits = boost::json::parse(res.body()).as_array();
  ASSERT_EQ(limits.size(), 1u);
  const auto& l = limits[0].as_object();
  EXPECT_EQ(l.at("listener").as_string(), "ingress");
  EXPECT_EQ(l.at("filter").as_string(), "vegas");
  EXPECT_EQ(l.at("type").as_string(), "rtt_gradient");
  EXPECT_EQ(l.at("limit").to_number<int>(), 20);
  EXPECT_EQ(l.at("in_flight").to_number<int>(), 3);
  EXPECT_EQ(l.at("queued").to_number<int>(), 1);
  EXPECT_EQ(l.at("admitted").to_number<int>(), 500);
  EXPECT_EQ(l.at("shed").to_number<int>(), 4);
  EXPECT_EQ(l.at("rtt_noload_ms").as_double(), 1.5);
  EXPECT_EQ(l.at("rtt_smoothed_ms").as_double(), 2.25);
  EXPECT_EQ(l.at("gradient").as_double(), 0.75);
  EXPECT_TRUE(l.at("p99_ms").is_null());
  const auto& d = l.at("recent_decisions").as_array().at(0).as_object();
  EXPECT_GE(d.at("ms_ago").to_number<int64_t>(), 1500);  // recorded 1.5 s before the request
  EXPECT_EQ(d.at("at").as_string().size(), std::string("2024-05-01T12:34:56.789Z").size());
  EXPECT_EQ(d.at("old_limit").to_number<int>(), 25);
  EXPECT_EQ(d.at("new_limit").to_number<int>(), 20);
  EXPECT_EQ(d.at("reason").as_string(), "gradient 0.6");
}

TEST_F(AdminServerTest, LimitsCarryClassesBaselinesQueueingAndTheRecentQueueWait) {
  // The fixture's queue waits were recorded before the history started: they are not recent.
  const auto first = boost::json::parse(get("/limits").body()).as_array().at(0).as_object();
  EXPECT_TRUE(first.at("queue_wait_p99_ms_recent").is_null());
  EXPECT_TRUE(first.at("queueing").is_null());
  EXPECT_TRUE(first.at("baselines").as_array().empty());
  EXPECT_EQ(first.at("classes").as_object().size(), 4u);

  Histogram& h = registry_.histogram(
      StatName{"filter", {{"listener", "ingress"}, {"filter", "vegas"}}, "queue_wait_us"},
      "Queue wait", "us");
  boost::json::value recent;
  for (int i = 0; i < 500; ++i) {  // a sample every 20 ms picks the new waits up
    // Again now and then: the window is 200 ms, which a loaded machine (ctest -j2 beside the
    // browser test) can let pass between two requests.
    if (i % 10 == 0) {
      for (int k = 0; k < 50; ++k) h.record(7000);  // the largest wait yet: reported exactly
    }
    recent =
        boost::json::parse(get("/limits").body()).as_array().at(0).at("queue_wait_p99_ms_recent");
    if (!recent.is_null()) break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_FALSE(recent.is_null());
  EXPECT_EQ(recent.to_number<double>(), 7.0);
}

TEST_F(AdminServerTest, HistoryIsSampledOnTheAdminThreadAndSinceReturnsOnlyNewerSamples) {
  boost::json::object h;
  for (int i = 0; i < 500; ++i) {
    h = boost::json::parse(get("/history").body()).as_object();
    if (h.at("t").as_array().size() >= 4) break;
    std::this_thread::sleep_for(10ms);
  }
  const auto& t = h.at("t").as_array();
  ASSERT_GE(t.size(), 4u);
  for (std::size_t i = 1; i < t.size(); ++i) EXPECT_GT(t[i].as_int64(), t[i - 1].as_int64());
  EXPECT_EQ(h.at("interval_ms").as_int64(), 20);
  EXPECT_EQ(h.at("capacity").as_int64(), 600);
  const auto& filters = h.at("filters").as_array();
  ASSERT_EQ(filters.size(), 1u);
  EXPECT_EQ(filters[0].at("filter").as_string(), "vegas");
  EXPECT_EQ(filters[0].at("type").as_string(), "rtt_gradient");
  EXPECT_EQ(filters[0].at("limit").as_array().back().to_number<int>(), 20);
  EXPECT_EQ(filters[0].at("rtt_smoothed_ms").as_array().back().to_number<double>(), 2.25);
  ASSERT_EQ(h.at("listeners").as_array().size(), 1u);
  EXPECT_EQ(h.at("listeners").as_array()[0].at("listener").as_string(), "ingress");

  const int64_t since = t[t.size() - 2].as_int64();
  const Response res = get("/history?since=" + std::to_string(since));
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  const auto newer = boost::json::parse(res.body()).at("t").as_array();
  ASSERT_FALSE(newer.empty());
  for (const auto& v : newer) EXPECT_GT(v.as_int64(), since);
  EXPECT_EQ(get("/history?since=soon").result(), http::status::bad_request);
  EXPECT_EQ(get("/history?since=12x").result(), http::status::bad_request);
}

TEST_F(AdminServerTest, QueuesIsEmptyWithoutQueueMode) {
  const Response res = get("/queues");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  const auto q = boost::json::parse(res.body()).as_object();
  EXPECT_TRUE(q.at("queues").as_array().empty());
  EXPECT_TRUE(q.at("consumers").as_array().empty());
  EXPECT_EQ(q.at("recent_window_s").to_number<double>(), 0.2);  // 10 intervals of 20 ms
}

TEST_F(AdminServerTest, QueuesShowsEachQueueWithItsLiveStatsAndRecentEndToEnd) {
  const auto queue_stat = [](const char* leaf) {
    return StatName{"queue", {{"queue", "work"}}, leaf};
  };
  hooks_.set_config(R"({"queues": [{"name": "work", "redis": "127.0.0.1:6379",
      "stream": "sluice:work", "group": "sluice", "max_pending": 100}], "consumers": []})");
  registry_.gauge(queue_stat("backlog"), "").set(17);
  registry_.counter(queue_stat("frontend_rq_ok_total"), "").inc(3);
  Histogram& e2e = registry_.histogram(queue_stat("frontend_rq_time_us"), "", "us");
  for (int i = 0; i < 1000; ++i) e2e.record(900'000);  // before the history: not recent
  boost::json::object q;
  for (int i = 0; i < 500; ++i) {  // a sample every 20 ms picks the new calls up
    if (i % 10 == 2) {  // again now and then: a loaded machine may miss the 200 ms window
      for (int k = 0; k < 10; ++k) e2e.record(4000);
    }
    q = boost::json::parse(get("/queues").body()).at("queues").as_array().at(0).as_object();
    if (!q.at("e2e_ms_recent").is_null()) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(q.at("queue").as_string(), "work");
  EXPECT_EQ(q.at("stream").as_string(), "sluice:work");
  EXPECT_EQ(q.at("backlog").as_int64(), 17);
  EXPECT_EQ(q.at("requests").at("ok").as_int64(), 3);
  EXPECT_TRUE(q.at("requests").at("timeout").is_null());  // this registry has no such stat
  ASSERT_FALSE(q.at("e2e_ms_recent").is_null());
  EXPECT_EQ(q.at("e2e_ms_recent").at("count").as_int64() % 10, 0);
  EXPECT_LT(q.at("e2e_ms_recent").at("p99").to_number<double>(), 5.0);
}

TEST_F(AdminServerTest, ConfigDumpReturnsTheHookConfig) {
  const Response res = get("/config_dump");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(boost::json::parse(res.body()), hooks_.config_dump());
}

TEST_F(AdminServerTest, AThrowingHookGivesA500AndTheServerKeepsServing) {
  hooks_.throw_on_config_dump = true;
  const Response res = get("/config_dump");
  EXPECT_EQ(res.result(), http::status::internal_server_error);
  EXPECT_NE(res.body().find("config exploded"), std::string::npos);
  EXPECT_EQ(get("/ready").result(), http::status::ok);
}

TEST_F(AdminServerTest, ServerInfoReportsVersionUptimeWorkersConfigAndState) {
  const auto info = boost::json::parse(get("/server_info").body()).as_object();
  EXPECT_EQ(info.at("version").as_string(), "9.8.7");
  EXPECT_GE(info.at("uptime_s").to_number<double>(), 42.0);
  EXPECT_EQ(info.at("workers").to_number<int>(), 3);
  EXPECT_EQ(info.at("config_path").as_string(), "/etc/sluice/sluice.yaml");
  EXPECT_EQ(info.at("state").as_string(), "LIVE");
  EXPECT_TRUE(info.contains("started"));
  // Bound ports by listener name (what a reload that adds or moves a listener changes).
  EXPECT_EQ(boost::json::serialize(info.at("listeners")), R"({"ingress":8080,"side":41234})");
}

TEST_F(AdminServerTest, ServerInfoShowsTheConfigVersionAndNoReloadBeforeTheFirst) {
  const auto config = boost::json::parse(get("/server_info").body()).at("config").as_object();
  EXPECT_EQ(config.at("version").as_string(), "00112233aabbccdd");
  EXPECT_TRUE(config.contains("loaded_at"));
  EXPECT_TRUE(config.at("last_reload").is_null());
}

TEST_F(AdminServerTest, PostConfigReloadAnswersTheOutcomeAndServerInfoShowsIt) {
  ReloadResult r;
  r.ok = true;
  r.trigger = "admin";
  r.version = "aaaabbbbccccdddd";
  r.changes = {"listeners[0] (\"ingress\").filters"};
  hooks_.set_next_reload(r);
  const Response res = post("/config/reload");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  const auto body = boost::json::parse(res.body()).as_object();
  EXPECT_TRUE(body.at("ok").as_bool());
  EXPECT_EQ(body.at("version").as_string(), "aaaabbbbccccdddd");
  EXPECT_EQ(body.at("changes").as_array().size(), 1u);
  const auto last =
      boost::json::parse(get("/server_info").body()).at("config").at("last_reload").as_object();
  EXPECT_TRUE(last.at("ok").as_bool());
  EXPECT_EQ(last.at("trigger").as_string(), "admin");
  EXPECT_TRUE(last.contains("at"));
}

TEST_F(AdminServerTest, AFailedReloadIs400WithTheErrorAndARefusedOne409) {
  ReloadResult r;
  r.error = "sluice.yaml:3:5: at workers: must be an integer";
  hooks_.set_next_reload(r);
  Response res = post("/config/reload");
  EXPECT_EQ(res.result(), http::status::bad_request);
  auto body = boost::json::parse(res.body()).as_object();
  EXPECT_FALSE(body.at("ok").as_bool());
  EXPECT_EQ(body.at("error").as_string(), "sluice.yaml:3:5: at workers: must be an integer");
  EXPECT_FALSE(body.at("needs_restart").as_bool());

  r.needs_restart = true;
  r.error = "these changes need a restart: workers: 2 -> 4";
  hooks_.set_next_reload(r);
  res = post("/config/reload");
  EXPECT_EQ(res.result(), http::status::conflict);
  body = boost::json::parse(res.body()).as_object();
  EXPECT_TRUE(body.at("needs_restart").as_bool());
  EXPECT_EQ(get("/config/reload").result(), http::status::method_not_allowed);
}

TEST_F(AdminServerTest, ReadyFlipsWithHealthcheckFailAndOk) {
  Response ready = get("/ready");
  EXPECT_EQ(ready.result(), http::status::ok);
  EXPECT_EQ(ready.body(), "LIVE\n");

  EXPECT_EQ(post("/healthcheck/fail").result(), http::status::ok);
  ready = get("/ready");
  EXPECT_EQ(ready.result(), http::status::service_unavailable);
  EXPECT_EQ(ready.body(), "HEALTHCHECK_FAILED\n");
  EXPECT_EQ(boost::json::parse(get("/server_info").body()).at("state").as_string(),
            "HEALTHCHECK_FAILED");

  EXPECT_EQ(post("/healthcheck/ok").result(), http::status::ok);
  EXPECT_EQ(get("/ready").result(), http::status::ok);
}

TEST_F(AdminServerTest, ReadyIs503WithTheReasonsWhileTheProxyHasNoHealthyUpstream) {
  hooks_.set_unready(
      {"NO_HEALTHY_UPSTREAM cluster app (listener ingress): 0 of 2 addresses "
       "healthy: 10.0.0.1:50051 NOT_SERVING; 10.0.0.2:50051 NOT_SERVING"});
  Response ready = get("/ready");
  EXPECT_EQ(ready.result(), http::status::service_unavailable);
  EXPECT_EQ(ready.body(),
            "NO_HEALTHY_UPSTREAM cluster app (listener ingress): 0 of 2 addresses healthy: "
            "10.0.0.1:50051 NOT_SERVING; 10.0.0.2:50051 NOT_SERVING\n");
  const auto info = boost::json::parse(get("/server_info").body()).as_object();
  EXPECT_EQ(info.at("state").as_string(), "LIVE");  // the process itself is fine
  ASSERT_EQ(info.at("unready").as_array().size(), 1u);
  EXPECT_TRUE(info.at("unready").as_array()[0].as_string().starts_with("NO_HEALTHY_UPSTREAM"));
  // A drain or a failed healthcheck is the first thing to say.
  post("/healthcheck/fail");
  EXPECT_EQ(get("/ready").body(), "HEALTHCHECK_FAILED\n");
  post("/healthcheck/ok");
  hooks_.set_unready({});
  ready = get("/ready");
  EXPECT_EQ(ready.result(), http::status::ok);
  EXPECT_EQ(ready.body(), "LIVE\n");
  EXPECT_TRUE(boost::json::parse(get("/server_info").body()).at("unready").as_array().empty());
}

TEST_F(AdminServerTest, PostDrainCallsTheHookAndReadinessBecomesUnavailable) {
  EXPECT_EQ(post("/drain").result(), http::status::ok);
  EXPECT_EQ(hooks_.drain_calls.load(), 1);
  const Response ready = get("/ready");
  EXPECT_EQ(ready.result(), http::status::service_unavailable);
  EXPECT_EQ(ready.body(), "DRAINING\n");
  // Draining wins over a healthcheck flip back to ok.
  post("/healthcheck/ok");
  EXPECT_EQ(get("/ready").result(), http::status::service_unavailable);
}

TEST_F(AdminServerTest, MutationsAnswerGetWith405AndAllowPost) {
  for (const char* path : {"/drain", "/healthcheck/fail", "/healthcheck/ok", "/config/reload"}) {
    for (http::verb method : {http::verb::get, http::verb::head, http::verb::put}) {
      const Response res = Client(port()).send(method, path);
      EXPECT_EQ(res.result(), http::status::method_not_allowed) << path;
      EXPECT_EQ(res[http::field::allow], "POST") << path;
    }
  }
  EXPECT_EQ(hooks_.drain_calls.load(), 0);
  EXPECT_EQ(get("/ready").result(), http::status::ok);
}

TEST_F(AdminServerTest, ReadEndpointsAnswerPostWith405AndAllowGetHead) {
  for (const char* path : {"/", "/stats", "/stats/prometheus", "/limits", "/queues", "/history",
                           "/config_dump", "/ready", "/server_info"}) {
    const Response res = post(path);
    EXPECT_EQ(res.result(), http::status::method_not_allowed) << path;
    EXPECT_EQ(res[http::field::allow], "GET, HEAD") << path;
  }
}

TEST_F(AdminServerTest, UnknownPathsAre404) {
  EXPECT_EQ(get("/nope").result(), http::status::not_found);
  EXPECT_EQ(get("/stats/").result(), http::status::not_found);
  EXPECT_EQ(post("/drain/now").result(), http::status::not_found);
  EXPECT_EQ(hooks_.drain_calls.load(), 0);
}

TEST_F(AdminServerTest, HeadSendsGetHeadersWithoutABody) {
  Client client(port());
  const Response head = client.send(http::verb::head, "/stats");
  EXPECT_EQ(head.result(), http::status::ok);
  EXPECT_TRUE(head.body().empty());
  const Response get_res = client.send(http::verb::get, "/stats");  // same connection
  EXPECT_EQ(head[http::field::content_length], std::to_string(get_res.body().size()));
  EXPECT_EQ(head[http::field::content_type], get_res[http::field::content_type]);
  for (const char* path : {"/", "/stats/prometheus", "/limits", "/queues", "/history",
                           "/config_dump", "/ready", "/server_info"}) {
    EXPECT_EQ(client.send(http::verb::head, path).result(), http::status::ok) << path;
  }
}

TEST_F(AdminServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  Client client(port());
  for (int i = 0; i < 20; ++i) {
    const Response res = client.send(http::verb::get, i % 2 ? "/ready" : "/stats");
    ASSERT_EQ(res.result(), http::status::ok);
    EXPECT_TRUE(res.keep_alive());
  }
}

TEST_F(AdminServerTest, ConnectionCloseIsHonoured) {
  Client client(port());
  const Response res = client.send(http::verb::get, "/ready", {}, /*keep_alive=*/false);
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_FALSE(res.keep_alive());
  EXPECT_TRUE(client.closed_by_server());
}

TEST_F(AdminServerTest, MalformedRequestGets400AndTheConnectionCloses) {
  Client client(port());
  client.write_raw("THIS IS NOT HTTP\r\n\r\n");
  const Response res = client.read();
  EXPECT_EQ(res.result(), http::status::bad_request);
  EXPECT_TRUE(client.closed_by_server());
}

TEST_F(AdminServerTest, CrossOriginPostIsRefused) {
  Client client(port());
  const Response refused =
      client.send(http::verb::post, "/drain", {{"Origin", "http://evil.example"}});
  EXPECT_EQ(refused.result(), http::status::forbidden);
  EXPECT_EQ(hooks_.drain_calls.load(), 0);
  const Response same_origin =
      client.send(http::verb::post, "/healthcheck/fail", {{"Origin", "http://127.0.0.1"}});
  EXPECT_EQ(same_origin.result(), http::status::ok);
}

TEST_F(AdminServerTest, DashboardIsASelfContainedHtmlPage) {
  const Response res = get("/");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "text/html; charset=utf-8");
  const std::string& page = res.body();
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("window.sluiceDashboard"), std::string::npos);
  EXPECT_NE(page.find("\"/limits\""), std::string::npos);
  EXPECT_NE(page.find("\"/history\""), std::string::npos);
  // Works offline: nothing fetched from elsewhere.
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
}

TEST_F(AdminServerTest, StopClosesOpenConnectionsAndIsIdempotent) {
  Client client(port());
  ASSERT_EQ(client.send(http::verb::get, "/ready").result(), http::status::ok);
  server_->stop();
  EXPECT_TRUE(client.closed_by_server());
  server_->stop();
  boost::system::error_code ec;
  asio::io_context io;
  tcp::socket probe(io);
  probe.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port()), ec);
  EXPECT_TRUE(ec) << "listener still accepting after stop()";
}

}  // namespace
}  // namespace sluice
