// RedisConnection against a real redis-server (tests/queue/redis_server.h), plus a scripted
// fake server for what a real one never does (bad bytes, replies nobody asked for).
#include "src/queue/redis_connection.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "tests/queue/io_wait.h"
#include "tests/queue/redis_server.h"

namespace sluice::queue {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using State = RedisConnection::State;

// What a callback received, kept for assertions.
struct Outcome {
  bool done = false;
  std::optional<RespValue> value;
  std::optional<RedisError> error;
};

RedisConnection::Callback record(Outcome& o) {
  return [&o](RedisResult<RespValue> r) {
    EXPECT_FALSE(o.done) << "callback ran twice";
    o.done = true;
    if (r) {
      o.value = std::move(*r);
    } else {
      o.error = r.error();
    }
  };
}

RedisCommand cmd(std::initializer_list<std::string_view> args) {
  auto it = args.begin();
  RedisCommand c(*it++);
  for (; it != args.end(); ++it) c.arg(*it);
  return c;
}

class RedisConnectionTest : public ::testing::Test {
 protected:
  RedisConnection::Options options() {
    RedisConnection::Options o;
    o.port = server_.port();
    o.reconnect_min = 20ms;
    o.reconnect_max = 200ms;
    return o;
  }
  std::shared_ptr<RedisConnection> connect(RedisConnection::Options o) {
    auto c = RedisConnection::create(io_, std::move(o));
    c->start();
    EXPECT_TRUE(run_until(io_, [&] { return c->connected(); }));
    return c;
  }
  std::shared_ptr<RedisConnection> connect() { return connect(options()); }

  // Sends one command and waits for its outcome.
  Outcome call(RedisConnection& c, const RedisCommand& command) {
    Outcome o;
    c.send(command, record(o));
    EXPECT_TRUE(run_until(io_, [&] { return o.done; }));
    return o;
  }

  RedisServer server_;
  asio::io_context io_{1};
};

TEST_F(RedisConnectionTest, ConnectsAndAnswersACommand) {
  auto c = connect();
  EXPECT_EQ(c->state(), State::Connected);
  EXPECT_TRUE(c->stats().connected.load());
  EXPECT_EQ(c->stats().connects.load(), 1u);
  const Outcome o = call(*c, cmd({"PING"}));
  ASSERT_TRUE(o.value.has_value());
  EXPECT_EQ(*o.value, RespValue::simple("PONG"));
  EXPECT_EQ(c->in_flight(), 0u);
}

TEST_F(RedisConnectionTest, PipelinedRepliesMatchTheirCommandsInOrder) {
  auto c = connect();
  constexpr int kN = 2000;
  std::vector<int64_t> seen;
  std::vector<std::string> gets;
  for (int i = 0; i < kN; ++i) {
    c->send(cmd({"INCR", "counter"}), [&seen](RedisResult<RespValue> r) {
      ASSERT_TRUE(r.ok());
      seen.push_back(r->integer());
    });
    if (i % 100 == 0) {
      c->send(cmd({"GET", "counter"}),
              [&gets](RedisResult<RespValue> r) { gets.push_back(r.ok() ? r->str() : "error"); });
    }
  }
  EXPECT_GT(c->in_flight(), 0u);  // all sent before any reply was read
  ASSERT_TRUE(run_until(io_, [&] { return seen.size() == kN && gets.size() == kN / 100; }));
  for (int i = 0; i < kN; ++i) ASSERT_EQ(seen[i], i + 1);
  for (int i = 0; i < kN / 100; ++i) EXPECT_EQ(gets[i], std::to_string(i * 100 + 1));
  EXPECT_EQ(c->stats().replies.load(), static_cast<uint64_t>(kN + kN / 100));
  EXPECT_EQ(c->stats().in_flight.load(), 0);
}

TEST_F(RedisConnectionTest, AnErrorReplyFailsOnlyItsOwnCommand) {
  auto c = connect();
  Outcome a, b, d, e;
  c->send(cmd({"SET", "k", "v"}), record(a));
  c->send(cmd({"LPUSH", "k", "x"}), record(b));  // WRONGTYPE
  c->send(cmd({"NOSUCHCOMMAND"}), record(d));
  c->send(cmd({"GET", "k"}), record(e));
  ASSERT_TRUE(run_until(io_, [&] { return e.done; }));
  EXPECT_TRUE(a.value.has_value());
  ASSERT_TRUE(b.error.has_value());
  EXPECT_EQ(b.error->kind, RedisErrorKind::Server);
  EXPECT_EQ(b.error->code(), "WRONGTYPE");
  ASSERT_TRUE(d.error.has_value());
  EXPECT_EQ(d.error->code(), "ERR");
  ASSERT_TRUE(e.value.has_value());
  EXPECT_EQ(e.value->str(), "v");
  EXPECT_EQ(c->stats().error_replies.load(), 2u);
  EXPECT_TRUE(c->connected());
}

TEST_F(RedisConnectionTest, KeysAndValuesAreBinarySafe) {
  auto c = connect();
  const std::string key("k\r\n\0", 4);
  const std::string value("\0\r\n$3\r\n*\xff", 9);
  ASSERT_TRUE(call(*c, RedisCommand("SET").arg(key).arg(value)).value.has_value());
  const Outcome o = call(*c, RedisCommand("GET").arg(key));
  ASSERT_TRUE(o.value.has_value());
  EXPECT_EQ(o.value->str(), value);
  // Checked from outside as well: Redis stored exactly these bytes.
  EXPECT_EQ(server_.command({"STRLEN", key}).integer(), 9);
}

TEST_F(RedisConnectionTest, SetsTheClientNameOnConnect) {
  auto o = options();
  o.client_name = "sluice-test-frontend";
  auto c = connect(o);
  const Outcome r = call(*c, cmd({"CLIENT", "GETNAME"}));
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(r.value->str(), "sluice-test-frontend");
}

TEST_F(RedisConnectionTest, SendBeforeConnectedFailsFastAndNeverInsideTheCall) {
  auto c = RedisConnection::create(io_, options());
  Outcome o;
  c->send(cmd({"PING"}), record(o));
  EXPECT_FALSE(o.done);  // posted, not run inside send()
  ASSERT_TRUE(run_until(io_, [&] { return o.done; }));
  ASSERT_TRUE(o.error.has_value());
  EXPECT_EQ(o.error->kind, RedisErrorKind::NotConnected);
  EXPECT_TRUE(o.error->never_sent());
  EXPECT_EQ(c->state(), State::Idle);
}

TEST_F(RedisConnectionTest, TooManyCommandsInFlightFailFastAsOverloaded) {
  auto o = options();
  o.max_in_flight = 2;
  auto c = connect(o);
  Outcome a, b, d;
  c->send(cmd({"PING"}), record(a));
  c->send(cmd({"PING"}), record(b));
  c->send(cmd({"PING"}), record(d));
  ASSERT_TRUE(run_until(io_, [&] { return a.done && b.done && d.done; }));
  EXPECT_TRUE(a.value.has_value());
  EXPECT_TRUE(b.value.has_value());
  ASSERT_TRUE(d.error.has_value());
  EXPECT_EQ(d.error->kind, RedisErrorKind::Overloaded);
}

TEST_F(RedisConnectionTest, ABlockingPopOnItsOwnConnectionDoesNotStallAnother) {
  auto blocking = connect();
  auto other = connect();
  Outcome popped;
  blocking->send(cmd({"BLPOP", "replies", "5"}), 7s, record(popped));
  // While the BLPOP waits, the other connection keeps answering.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(call(*other, cmd({"PING"})).value.has_value());
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_FALSE(popped.done);
  ASSERT_TRUE(call(*other, cmd({"LPUSH", "replies", "r1"})).value.has_value());
  ASSERT_TRUE(run_until(io_, [&] { return popped.done; }));
  ASSERT_TRUE(popped.value.has_value());
  EXPECT_EQ(*popped.value, RespValue::array({RespValue::bulk("replies"), RespValue::bulk("r1")}));
}

TEST_F(RedisConnectionTest, TransactionRunsAllCommandsAndReturnsExecsReply) {
  auto c = connect();
  Outcome o;
  c->send_transaction({cmd({"LPUSH", "rk", "v"}), cmd({"PEXPIRE", "rk", "60000"})}, record(o));
  ASSERT_TRUE(run_until(io_, [&] { return o.done; }));
  ASSERT_TRUE(o.value.has_value()) << o.error->to_string();
  EXPECT_EQ(*o.value, RespValue::array({RespValue::integer(1), RespValue::integer(1)}));
  EXPECT_GT(server_.command({"PTTL", "rk"}).integer(), 0);
}

TEST_F(RedisConnectionTest, ARefusedTransactionRunsNothingAndNamesTheRefusal) {
  auto c = connect();
  Outcome o;
  c->send_transaction({cmd({"LPUSH", "rk", "v"}), cmd({"PEXPIRE", "rk"})}, record(o));
  ASSERT_TRUE(run_until(io_, [&] { return o.done; }));
  ASSERT_TRUE(o.error.has_value());
  EXPECT_EQ(o.error->code(), "EXECABORT");
  EXPECT_NE(o.error->message.find("wrong number of arguments"), std::string::npos)
      << o.error->message;
  EXPECT_EQ(server_.command({"EXISTS", "rk"}).integer(), 0);
  EXPECT_TRUE(call(*c, cmd({"PING"})).value.has_value());  // the pipeline is still in step
}

TEST_F(RedisConnectionTest, ACommandTimeoutFailsItAndResetsTheConnectionWhichComesBack) {
  auto c = connect();
  Outcome slow, behind;
  c->send(cmd({"DEBUG", "SLEEP", "0.5"}), 100ms, record(slow));
  c->send(cmd({"PING"}), 0ms, record(behind));  // no timeout of its own: waits behind it
  ASSERT_TRUE(run_until(io_, [&] { return slow.done && behind.done; }));
  ASSERT_TRUE(slow.error.has_value());
  EXPECT_EQ(slow.error->kind, RedisErrorKind::Timeout);
  EXPECT_FALSE(slow.error->never_sent());
  ASSERT_TRUE(behind.error.has_value());
  EXPECT_EQ(behind.error->kind, RedisErrorKind::ConnectionLost);
  EXPECT_EQ(c->stats().timeouts.load(), 1u);
  ASSERT_TRUE(run_until(io_, [&] { return c->connected(); }));
  EXPECT_TRUE(call(*c, cmd({"PING"})).value.has_value());
  EXPECT_EQ(c->stats().connects.load(), 2u);
}

TEST_F(RedisConnectionTest, CommandsWithinTheirTimeoutAreNotDisturbedByIt) {
  auto c = connect();
  Outcome slow;
  c->send(cmd({"DEBUG", "SLEEP", "0.2"}), 2s, record(slow));
  ASSERT_TRUE(run_until(io_, [&] { return slow.done; }));
  EXPECT_TRUE(slow.value.has_value());
  EXPECT_EQ(c->stats().connects.load(), 1u);
}

TEST_F(RedisConnectionTest, RedisRestartedUnderALiveConnection) {
  auto c = connect();
  std::vector<State> states;
  c->set_state_listener([&states](State s) { states.push_back(s); });
  ASSERT_TRUE(call(*c, cmd({"SET", "before", "1"})).value.has_value());

  // In flight when Redis goes: a BLPOP that would wait 5 s, and a PING queued behind it.
  Outcome blpop, ping;
  c->send(cmd({"BLPOP", "nothing", "5"}), 7s, record(blpop));
  c->send(cmd({"PING"}), record(ping));
  run_for(io_, 50ms);  // both written
  server_.stop();
  ASSERT_TRUE(run_until(io_, [&] { return blpop.done && ping.done; }));
  ASSERT_TRUE(blpop.error.has_value());
  EXPECT_EQ(blpop.error->kind, RedisErrorKind::ConnectionLost);
  ASSERT_TRUE(ping.error.has_value());
  EXPECT_EQ(ping.error->kind, RedisErrorKind::ConnectionLost);
  EXPECT_FALSE(c->connected());
  EXPECT_FALSE(c->stats().last_error().empty());

  // While Redis is down: fail fast, never queued for later.
  Outcome down;
  const auto asked = std::chrono::steady_clock::now();
  c->send(cmd({"SET", "during", "1"}), record(down));
  ASSERT_TRUE(run_until(io_, [&] { return down.done; }));
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 50ms);
  ASSERT_TRUE(down.error.has_value());
  EXPECT_EQ(down.error->kind, RedisErrorKind::NotConnected);
  run_for(io_, 300ms);  // a few failed reconnect attempts
  EXPECT_GE(c->stats().connect_failures.load(), 1u);

  server_.start();
  const auto up = std::chrono::steady_clock::now();
  ASSERT_TRUE(run_until(io_, [&] { return c->connected(); }));
  const auto reconnect_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - up);
  std::printf("reconnected %lld ms after redis-server answered again (backoff cap 200 ms)\n",
              static_cast<long long>(reconnect_ms.count()));
  EXPECT_LT(reconnect_ms, 1s);
  const Outcome after = call(*c, cmd({"SET", "after", "1"}));
  EXPECT_TRUE(after.value.has_value());
  // Nothing was re-sent on the new connection: the command that failed fast never ran.
  EXPECT_EQ(server_.command({"EXISTS", "during"}).integer(), 0);
  EXPECT_EQ(server_.command({"EXISTS", "after"}).integer(), 1);
  EXPECT_EQ(c->stats().connects.load(), 2u);
  EXPECT_EQ(c->stats().disconnects.load(), 1u);
  ASSERT_FALSE(states.empty());
  EXPECT_EQ(states.front(), State::WaitingToReconnect);
  EXPECT_EQ(states.back(), State::Connected);
}

TEST_F(RedisConnectionTest, RedisKilledWithoutAWordIsALostConnectionToo) {
  auto c = connect();
  Outcome blpop;
  c->send(cmd({"BLPOP", "nothing", "5"}), 7s, record(blpop));
  run_for(io_, 50ms);
  server_.kill();
  ASSERT_TRUE(run_until(io_, [&] { return blpop.done; }));
  ASSERT_TRUE(blpop.error.has_value());
  EXPECT_EQ(blpop.error->kind, RedisErrorKind::ConnectionLost);
  server_.start();
  ASSERT_TRUE(run_until(io_, [&] { return c->connected(); }));
  EXPECT_TRUE(call(*c, cmd({"PING"})).value.has_value());
}

TEST_F(RedisConnectionTest, UnreachableServerKeepsRetryingAndConnectsOnceItIsUp) {
  server_.stop();
  auto c = RedisConnection::create(io_, options());
  c->start();
  ASSERT_TRUE(run_until(io_, [&] { return c->stats().connect_failures.load() >= 3; }));
  EXPECT_EQ(c->state(), State::WaitingToReconnect);
  EXPECT_NE(c->stats().last_error().find("refused"), std::string::npos) << c->stats().last_error();
  server_.start();
  ASSERT_TRUE(run_until(io_, [&] { return c->connected(); }));
  EXPECT_TRUE(call(*c, cmd({"PING"})).value.has_value());
}

TEST_F(RedisConnectionTest, AConnectThatHangsTimesOutAndIsRetried) {
  // A listener whose accept queue is full drops SYNs: connect() hangs, as to a host that is
  // gone. Backlog 0 holds one connection; that one is taken here.
  asio::ip::tcp::acceptor full(io_);
  full.open(asio::ip::tcp::v4());
  full.bind(asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  full.listen(0);
  asio::ip::tcp::socket filler(io_);
  filler.connect(full.local_endpoint());
  auto o = options();
  o.port = full.local_endpoint().port();
  o.connect_timeout = 100ms;
  auto c = RedisConnection::create(io_, o);
  const auto start = std::chrono::steady_clock::now();
  c->start();
  ASSERT_TRUE(run_until(io_, [&] { return c->stats().connect_failures.load() >= 2; }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  EXPECT_NE(c->stats().last_error().find("connect timeout after 100 ms"), std::string::npos)
      << c->stats().last_error();
  EXPECT_FALSE(c->connected());
  c->close();
}

TEST_F(RedisConnectionTest, CloseFailsCommandsInFlightAndStopsReconnecting) {
  auto c = connect();
  Outcome blpop;
  c->send(cmd({"BLPOP", "nothing", "5"}), 7s, record(blpop));
  run_for(io_, 20ms);
  c->close();
  EXPECT_FALSE(blpop.done);  // posted
  ASSERT_TRUE(run_until(io_, [&] { return blpop.done; }));
  ASSERT_TRUE(blpop.error.has_value());
  EXPECT_EQ(blpop.error->kind, RedisErrorKind::ConnectionLost);
  EXPECT_EQ(c->state(), State::Closed);
  run_for(io_, 100ms);
  EXPECT_EQ(c->state(), State::Closed);
  EXPECT_EQ(c->stats().connects.load(), 1u);
  Outcome late;
  c->send(cmd({"PING"}), record(late));
  ASSERT_TRUE(run_until(io_, [&] { return late.done; }));
  EXPECT_EQ(late.error->kind, RedisErrorKind::NotConnected);
}

TEST_F(RedisConnectionTest, DestroyingTheConnectionStillCompletesItsCommands) {
  Outcome blpop;
  {
    auto c = connect();
    c->send(cmd({"BLPOP", "nothing", "5"}), 7s, record(blpop));
    run_for(io_, 20ms);
  }
  ASSERT_TRUE(run_until(io_, [&] { return blpop.done; }));
  ASSERT_TRUE(blpop.error.has_value());
  EXPECT_EQ(blpop.error->kind, RedisErrorKind::ConnectionLost);
}

TEST_F(RedisConnectionTest, AListenerMaySendOnConnectedAndItGoesAfterSetup) {
  auto o = options();
  o.client_name = "setup-first";
  auto c = RedisConnection::create(io_, o);
  Outcome name;
  c->set_state_listener([&](State s) {
    if (s == State::Connected) c->send(cmd({"CLIENT", "GETNAME"}), record(name));
  });
  c->start();
  ASSERT_TRUE(run_until(io_, [&] { return name.done; }));
  ASSERT_TRUE(name.value.has_value());
  EXPECT_EQ(name.value->str(), "setup-first");
}

// A one-connection fake Redis: reads whatever arrives and answers with `script` once it has
// read `after_bytes` bytes.
class FakeRedis {
 public:
  FakeRedis(asio::io_context& io, std::string script, std::size_t after_bytes)
      : acceptor_(io, asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 0)),
        socket_(io),
        script_(std::move(script)),
        after_bytes_(after_bytes) {
    acceptor_.async_accept(socket_, [this](boost::system::error_code ec) {
      if (ec) return;
      if (after_bytes_ == 0) answer();
      read();
    });
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  void read() {
    socket_.async_read_some(asio::buffer(buf_),
                            [this](boost::system::error_code ec, std::size_t n) {
                              if (ec) return;
                              received_ += n;
                              if (received_ >= after_bytes_) answer();
                              read();
                            });
  }
  void answer() {
    if (answered_) return;
    answered_ = true;
    asio::async_write(socket_, asio::buffer(script_),
                      [](boost::system::error_code, std::size_t) {});
  }

  asio::ip::tcp::acceptor acceptor_;
  asio::ip::tcp::socket socket_;
  std::string script_;
  std::size_t after_bytes_;
  std::size_t received_ = 0;
  bool answered_ = false;
  char buf_[4096];
};

TEST_F(RedisConnectionTest, AProtocolErrorFailsCommandsInFlightAndResetsTheConnection) {
  const std::size_t ping = RedisCommand("PING").encoded_size();
  FakeRedis fake(io_, "+PONG\r\n!garbage\r\n", 2 * ping);
  auto o = options();
  o.port = fake.port();
  auto c = connect(o);
  Outcome first, second;
  c->send(cmd({"PING"}), record(first));
  c->send(cmd({"PING"}), record(second));
  ASSERT_TRUE(run_until(io_, [&] { return first.done && second.done; }));
  ASSERT_TRUE(first.value.has_value());  // the good reply before the garbage still counts
  ASSERT_TRUE(second.error.has_value());
  EXPECT_EQ(second.error->kind, RedisErrorKind::ConnectionLost);
  EXPECT_NE(second.error->message.find("protocol error"), std::string::npos);
  EXPECT_NE(c->stats().last_error().find("unexpected RESP type byte"), std::string::npos);
}

TEST_F(RedisConnectionTest, AnUnsolicitedReplyResetsTheConnectionAndSaysWhat) {
  // What Redis does when maxclients is reached: one error, before any command, then close.
  FakeRedis fake(io_, "-ERR max number of clients reached\r\n", 0);
  auto o = options();
  o.port = fake.port();
  auto c = RedisConnection::create(io_, o);
  c->start();
  ASSERT_TRUE(run_until(io_, [&] { return c->stats().disconnects.load() >= 1; }));
  EXPECT_NE(c->stats().last_error().find("max number of clients reached"), std::string::npos)
      << c->stats().last_error();
}

}  // namespace
}  // namespace sluice::queue
