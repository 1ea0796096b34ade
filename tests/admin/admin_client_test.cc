// AdminClient against a real AdminServer on an ephemeral port (a fake proxy behind AdminHooks),
// and against peers that refuse, never answer, or hang up: each must end in its own outcome.
#include "src/admin/admin_client.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "src/admin/admin_server.h"
#include "tests/admin/fake_admin_hooks.h"

namespace sluice {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;
using Outcome = AdminReply::Outcome;

// A bound port with nothing listening on it: connecting is refused.
uint16_t closed_port() {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();  // closed again when `acceptor` goes
}

class AdminClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AdminConfig config;
    config.address = SocketAddress{"127.0.0.1", 0};
    server_ = std::make_unique<AdminServer>(config, registry_, hooks_);
    server_->start();
  }
  void TearDown() override { server_->stop(); }

  // Long enough never to fire against the in-process server, even on a loaded CI machine.
  AdminClient client() const { return AdminClient({"127.0.0.1", server_->bound_port()}, 10s); }

  StatsRegistry registry_;
  FakeAdminHooks hooks_;
  std::unique_ptr<AdminServer> server_;
};

TEST_F(AdminClientTest, GetReadyIsA200WithTheStateAsBody) {
  const AdminReply reply = client().request("GET", "/ready");
  EXPECT_EQ(reply.outcome, Outcome::kAnswered) << reply.error;
  EXPECT_EQ(reply.status, 200u);
  EXPECT_EQ(reply.body, "LIVE\n");
  EXPECT_TRUE(reply.ok());
}

TEST_F(AdminClientTest, PostDrainDrainsAndReadyThenAnswers503) {
  EXPECT_TRUE(client().request("POST", "/drain").ok());
  EXPECT_EQ(hooks_.drain_calls.load(), 1);
  const AdminReply ready = client().request("GET", "/ready");
  EXPECT_EQ(ready.outcome, Outcome::kAnswered);
  EXPECT_EQ(ready.status, 503u);
  EXPECT_EQ(ready.reason, "Service Unavailable");
  EXPECT_EQ(ready.body, "DRAINING\n");
  EXPECT_FALSE(ready.ok());
}

TEST_F(AdminClientTest, HealthcheckFailTurnsReadyUnhealthy) {
  EXPECT_TRUE(client().request("POST", "/healthcheck/fail").ok());
  EXPECT_EQ(client().request("GET", "/ready").body, "HEALTHCHECK_FAILED\n");
  EXPECT_TRUE(client().request("POST", "/healthcheck/ok").ok());
  EXPECT_TRUE(client().request("GET", "/ready").ok());
}

TEST_F(AdminClientTest, QueryStringsReachTheServer) {
  registry_.counter(StatName{"listener", {{"listener", "ingress"}}, "rq_total"}, "Requests").inc(7);
  const AdminReply reply = client().request("GET", "/stats?filter=rq_total");
  EXPECT_TRUE(reply.ok()) << reply.error;
  EXPECT_EQ(reply.body, "listener.ingress.rq_total: 7\n");
}

TEST_F(AdminClientTest, AnswersOutside2xxAreAnsweredButNotOk) {
  const AdminReply missing = client().request("GET", "/no-such-endpoint");
  EXPECT_EQ(missing.outcome, Outcome::kAnswered);
  EXPECT_EQ(missing.status, 404u);
  EXPECT_FALSE(missing.ok());
  const AdminReply wrong_method = client().request("POST", "/ready");
  EXPECT_EQ(wrong_method.status, 405u);
  EXPECT_FALSE(wrong_method.ok());
  EXPECT_EQ(hooks_.drain_calls.load(), 0);
}

TEST_F(AdminClientTest, LargeBodiesArriveWhole) {
  for (int i = 0; i < 2000; ++i) {
    registry_.counter(StatName{"test", {{"n", std::to_string(i)}}, "c"}, "Counter").inc(i);
  }
  const AdminReply reply = client().request("GET", "/stats?format=json");
  EXPECT_TRUE(reply.ok()) << reply.error;
  EXPECT_GT(reply.body.size(), 50'000u);
  EXPECT_NE(reply.body.find("\"test.1999.c\""), std::string::npos);
}

TEST_F(AdminClientTest, ResolvesHostNames) {
  const AdminReply reply =
      AdminClient({"localhost", server_->bound_port()}, 10s).request("GET", "/ready");
  // localhost may resolve to ::1 first; the server listens on 127.0.0.1 only, and the client
  // tries every address the name resolves to.
  EXPECT_TRUE(reply.ok()) << reply.error;
}

TEST(AdminClientPeerTest, RefusedConnectionIsUnreachable) {
  const uint16_t port = closed_port();
  const AdminReply reply = AdminClient({"127.0.0.1", port}, 10s).request("GET", "/ready");
  EXPECT_EQ(reply.outcome, Outcome::kUnreachable);
  EXPECT_EQ(reply.error,
            "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused");
  EXPECT_FALSE(reply.ok());
}

TEST(AdminClientPeerTest, APeerThatNeverAnswersTimesOut) {
  // Accepts (the kernel completes the handshake on listen) but never reads or writes.
  asio::io_context io;
  tcp::acceptor silent(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const uint16_t port = silent.local_endpoint().port();
  const auto start = std::chrono::steady_clock::now();
  const AdminReply reply = AdminClient({"127.0.0.1", port}, 300ms).request("GET", "/ready");
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(reply.outcome, Outcome::kTimedOut);
  EXPECT_EQ(reply.error, "no answer from 127.0.0.1:" + std::to_string(port) + " within 300ms");
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 10s);  // a hang guard, not a timing check
}

TEST(AdminClientPeerTest, APeerThatHangsUpIsABadResponse) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const uint16_t port = acceptor.local_endpoint().port();
  std::thread peer([&acceptor] {
    tcp::socket socket = acceptor.accept();
    char request[1024];
    boost::system::error_code ec;
    socket.read_some(asio::buffer(request), ec);
    socket.close();
  });
  const AdminReply reply = AdminClient({"127.0.0.1", port}, 10s).request("GET", "/ready");
  peer.join();
  EXPECT_EQ(reply.outcome, Outcome::kBadResponse);
  EXPECT_EQ(reply.error,
            "127.0.0.1:" + std::to_string(port) + " closed the connection without a response");
}

TEST(AdminClientPeerTest, MethodsOtherThanGetAndPostAreRefusedWithoutSending) {
  const AdminReply reply = AdminClient({"127.0.0.1", 1}, 10s).request("DELETE", "/drain");
  EXPECT_EQ(reply.outcome, Outcome::kBadResponse);
  EXPECT_EQ(reply.error, "unsupported method DELETE (GET or POST)");
}

TEST(AdminClientAddressTest, ParsesHostPortAndBracketedIpv6) {
  EXPECT_EQ(AdminClient::parse_address("127.0.0.1:9901"), (SocketAddress{"127.0.0.1", 9901}));
  EXPECT_EQ(AdminClient::parse_address("localhost:1"), (SocketAddress{"localhost", 1}));
  EXPECT_EQ(AdminClient::parse_address("[::1]:65535"), (SocketAddress{"::1", 65535}));
}

TEST(AdminClientAddressTest, RejectsMalformedAddresses) {
  for (const char* bad : {"", "9901", ":9901", "host:", "host:0", "host:65536", "host:99x",
                          "::1:9901", "[::1]9901", "[nope]:1", "[::1]:"}) {
    EXPECT_EQ(AdminClient::parse_address(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace sluice
