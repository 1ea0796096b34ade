// sluice-queue-bench: the queue library against a real redis-server, single-threaded like a
// sluice worker.
//   xadd       pipelined XADD of envelopes, --window commands in flight: entries/s
//   roundtrip  closed loop of --window calls: frontend XADD -> consumer XREADGROUP BLOCK ->
//              push_reply + XACK/XDEL -> frontend ReplyInbox (BLPOP + LPOP drain, call ids);
//              calls/s and latency percentiles (frontend and consumer share this one thread)
//   reconnect  PING every millisecond and print each state change with a timestamp; restart
//              redis-server meanwhile to see how long the connection stays down
#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "src/queue/queue_envelope.h"
#include "src/queue/queue_reply.h"
#include "src/queue/redis_streams.h"
#include "src/queue/reply_inbox.h"

namespace {

namespace asio = boost::asio;
using namespace sluice::queue;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Options {
  std::string mode = "xadd";
  std::string host = "127.0.0.1";
  uint16_t port = 6379;
  uint64_t count = 100000;
  uint64_t window = 256;
  std::size_t body = 256;
  uint64_t seconds = 30;
  std::string stream = "sluice:bench";
};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::shared_ptr<RedisConnection> open(asio::io_context& io, const Options& o, std::string name) {
  RedisConnection::Options c;
  c.host = o.host;
  c.port = o.port;
  c.client_name = std::move(name);
  auto conn = RedisConnection::create(io, c);
  conn->start();
  const auto deadline = Clock::now() + 5s;
  while (!conn->connected() && Clock::now() < deadline) io.run_one_for(10ms);
  if (!conn->connected()) {
    std::fprintf(stderr, "cannot connect to %s: %s\n", conn->endpoint().c_str(),
                 conn->stats().last_error().c_str());
    std::exit(1);
  }
  return conn;
}

QueueEnvelope envelope(const Options& o, uint64_t i, const std::string& reply_to) {
  QueueEnvelope e;
  e.method = "/sluice.bench.Echo/Unary";
  e.call_id = std::to_string(i);
  e.reply_to = reply_to;
  e.frontend = "bench";
  e.deadline_unix_ms = unix_ms_now() + 5000;
  e.enqueued_unix_ms = unix_ms_now();
  e.metadata = {{"content-type", "application/grpc"},
                {"te", "trailers"},
                {"x-request-id", std::to_string(i)}};
  e.body.assign(o.body, 'x');
  return e;
}

void run_until_done(asio::io_context& io, const bool& done) {
  while (!done) {
    io.restart();
    io.run_for(50ms);
  }
}

int bench_xadd(const Options& o) {
  asio::io_context io{1};
  auto conn = open(io, o, "bench-xadd");
  RedisStreams streams(conn);
  conn->send(RedisCommand("DEL").arg(o.stream), [](RedisResult<RespValue>) {});
  const StreamFields fields = envelope(o, 0, o.stream + ":reply").encode();
  uint64_t sent = 0, done_count = 0, failed = 0;
  bool done = false;
  const auto start = Clock::now();
  std::function<void()> send_one = [&] {
    ++sent;
    streams.xadd(o.stream, fields, std::nullopt, [&](RedisResult<std::string> r) {
      if (!r) ++failed;
      if (++done_count == o.count) {
        done = true;
      } else if (sent < o.count) {
        send_one();
      }
    });
  };
  for (uint64_t i = 0; i < std::min(o.window, o.count); ++i) send_one();
  run_until_done(io, done);
  const double s = seconds_since(start);
  std::printf(
      "xadd: %llu entries (%zu-byte body, %zu wire bytes each), window %llu: %.2f s, "
      "%.0f entries/s, %llu failed\n",
      static_cast<unsigned long long>(o.count), o.body,
      RedisStreams::xadd_command(o.stream, fields, std::nullopt).encoded_size(),
      static_cast<unsigned long long>(o.window), s, static_cast<double>(o.count) / s,
      static_cast<unsigned long long>(failed));
  return failed == 0 ? 0 : 1;
}

int bench_roundtrip(const Options& o) {
  asio::io_context io{1};
  const std::string reply_to = o.stream + ":reply:bench:0";
  auto front = open(io, o, "bench-frontend");
  auto consumer_read = open(io, o, "bench-consumer-read");
  auto consumer_cmd = open(io, o, "bench-consumer");
  RedisStreams frontend(front), reader(consumer_read), worker(consumer_cmd);
  bool ready = false;
  front->send(RedisCommand("DEL").arg(o.stream).arg(reply_to), [](RedisResult<RespValue>) {});
  frontend.create_group(o.stream, "g", "0", [&](RedisResult<bool>) { ready = true; });
  run_until_done(io, ready);

  // The frontend's reply loop: ReplyInbox on its own connection.
  RedisConnection::Options inbox_options;
  inbox_options.host = o.host;
  inbox_options.port = o.port;
  inbox_options.client_name = "bench-frontend-replies";
  ReplyInbox::Options inbox_config;
  inbox_config.key = reply_to;
  auto inbox = ReplyInbox::create(RedisConnection::create(io, inbox_options), inbox_config);
  inbox->start();

  std::vector<double> latencies_us;
  latencies_us.reserve(o.count);
  uint64_t started = 0, errors = 0;
  bool done = false;

  std::function<void()> start_call = [&] {
    const uint64_t id = started++;
    const auto t0 = Clock::now();
    // Expect before XADD: a fast reply must find its call waiting.
    inbox->expect(std::to_string(id), [&, t0](RedisResult<QueueReply> r) {
      if (!r) ++errors;
      latencies_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      if (latencies_us.size() == o.count) {
        done = true;
      } else if (started < o.count) {
        start_call();
      }
    });
    frontend.xadd(o.stream, envelope(o, id, reply_to).encode(), 100000,
                  [&](RedisResult<std::string> r) {
                    if (!r) ++errors;
                  });
  };

  // Consumer: read up to 64 with BLOCK, answer each at once (an echo service), ack + delete.
  std::function<void()> read_next = [&] {
    if (done) return;
    RedisStreams::ReadGroupArgs args{o.stream, "g", "c1", 64, 1s, ">"};
    reader.xreadgroup(args, [&](RedisResult<std::vector<StreamEntry>> r) {
      if (r) {
        std::vector<std::string> ids;
        for (const StreamEntry& e : *r) {
          auto env = QueueEnvelope::decode(e.fields);
          ids.push_back(e.id);
          if (!env) {
            ++errors;
            continue;
          }
          QueueReply reply;
          reply.call_id = env->call_id;
          reply.consumer = "c1";
          reply.headers = {{":status", "200"}, {"content-type", "application/grpc"}};
          reply.body = env->body;
          reply.trailers = {{"grpc-status", "0"}};
          worker.push_reply(env->reply_to, reply.encode(), 60s, [&](RedisResult<int64_t> p) {
            if (!p) ++errors;
          });
        }
        if (!ids.empty()) worker.ack_and_delete(o.stream, "g", ids, [](RedisResult<int64_t>) {});
      } else {
        ++errors;
      }
      read_next();
    });
  };

  const auto start = Clock::now();
  read_next();
  for (uint64_t i = 0; i < std::min(o.window, o.count); ++i) start_call();
  run_until_done(io, done);
  const double s = seconds_since(start);
  inbox->stop();
  std::sort(latencies_us.begin(), latencies_us.end());
  auto pct = [&](double p) {
    return latencies_us[std::min(latencies_us.size() - 1,
                                 static_cast<std::size_t>(p * latencies_us.size()))];
  };
  std::printf(
      "roundtrip: %llu calls (%zu-byte body), window %llu: %.2f s, %.0f calls/s, "
      "latency us p50 %.0f p90 %.0f p99 %.0f max %.0f, %llu errors, %llu unmatched\n",
      static_cast<unsigned long long>(o.count), o.body, static_cast<unsigned long long>(o.window),
      s, static_cast<double>(o.count) / s, pct(0.5), pct(0.9), pct(0.99), latencies_us.back(),
      static_cast<unsigned long long>(errors),
      static_cast<unsigned long long>(inbox->stats().unmatched.load()));
  return errors == 0 ? 0 : 1;
}

int bench_reconnect(const Options& o) {
  asio::io_context io{1};
  RedisConnection::Options c;
  c.host = o.host;
  c.port = o.port;
  auto conn = RedisConnection::create(io, c);
  const auto start = Clock::now();
  Clock::time_point down_at{};
  auto ms = [&](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(t - start).count();
  };
  conn->set_state_listener([&](RedisConnection::State s) {
    const auto now = Clock::now();
    if (s == RedisConnection::State::WaitingToReconnect && down_at == Clock::time_point{}) {
      down_at = now;
      std::printf("%10.1f ms  down: %s\n", ms(now), conn->stats().last_error().c_str());
    } else if (s == RedisConnection::State::Connected) {
      if (down_at != Clock::time_point{}) {
        std::printf("%10.1f ms  up again after %.1f ms down, %llu failed connects so far\n",
                    ms(now), std::chrono::duration<double, std::milli>(now - down_at).count(),
                    static_cast<unsigned long long>(conn->stats().connect_failures.load()));
      } else {
        std::printf("%10.1f ms  connected\n", ms(now));
      }
      down_at = {};
    }
    std::fflush(stdout);
  });
  conn->start();
  asio::steady_timer tick(io);
  uint64_t ok = 0, failed = 0;
  std::function<void()> ping = [&] {
    conn->send(RedisCommand("PING"), [&](RedisResult<RespValue> r) { r ? ++ok : ++failed; });
    tick.expires_after(1ms);
    tick.async_wait([&](boost::system::error_code ec) {
      if (ec) return;
      if (seconds_since(start) < static_cast<double>(o.seconds)) {
        ping();
      } else {
        conn->close();  // no more reconnect timers: run() returns
      }
    });
  };
  ping();
  io.run();
  std::printf("pings: %llu answered, %llu failed\n", static_cast<unsigned long long>(ok),
              static_cast<unsigned long long>(failed));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"sluice-queue-bench: the queue library against a running redis-server"};
  app.add_option("mode", o.mode, "xadd | roundtrip | reconnect")
      ->check(CLI::IsMember({"xadd", "roundtrip", "reconnect"}));
  app.add_option("--host", o.host, "Redis host");
  app.add_option("--port", o.port, "Redis port");
  app.add_option("--count", o.count, "entries (xadd) or calls (roundtrip)")
      ->check(CLI::Range(1, 100000000));
  app.add_option("--window", o.window, "commands or calls in flight")->check(CLI::Range(1, 65536));
  app.add_option("--body", o.body, "request body bytes");
  app.add_option("--seconds", o.seconds, "how long reconnect runs");
  app.add_option("--stream", o.stream, "stream key (deleted first)");
  CLI11_PARSE(app, argc, argv);
  if (o.mode == "xadd") return bench_xadd(o);
  if (o.mode == "roundtrip") return bench_roundtrip(o);
  return bench_reconnect(o);
}
