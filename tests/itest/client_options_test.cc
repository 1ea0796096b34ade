#include "integration/client/client_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::itest {
namespace {

using namespace std::chrono_literals;

std::variant<ClientOptions, int> parse(std::vector<std::string> args) {
  std::string program = "sluice-test-client";
  std::vector<char*> argv{program.data()};
  for (auto& a : args) argv.push_back(a.data());
  return parse_client_options(static_cast<int>(argv.size()), argv.data());
}

ClientOptions parse_ok(std::vector<std::string> args) {
  auto result = parse(std::move(args));
  if (auto* options = std::get_if<ClientOptions>(&result)) return std::move(*options);
  ADD_FAILURE() << "parse failed with exit code " << std::get<int>(result);
  return {};
}

int parse_error(std::vector<std::string> args) {
  auto result = parse(std::move(args));
  return std::holds_alternative<int>(result) ? std::get<int>(result) : -1;
}

TEST(ItestClientOptionsTest, DefaultsToOneUnaryCall) {
  ClientOptions o = parse_ok({"--target", "127.0.0.1:1"});
  EXPECT_EQ(o.method, CallMethod::kUnary);
  EXPECT_EQ(o.count, 1u);
  EXPECT_FALSE(o.deadline);
  EXPECT_FALSE(o.expect_status);
}

TEST(ItestClientOptionsTest, TlsCaMustBeAnExistingFile) {
  EXPECT_EQ(parse_error({"--target", "127.0.0.1:1", "--tls-ca", "/nonexistent/ca.pem"}), 2);
  ClientOptions o = parse_ok(
      {"--target", "127.0.0.1:1", "--tls-ca", "/dev/null", "--tls-server-name", "localhost"});
  EXPECT_EQ(o.tls_ca, "/dev/null");
  EXPECT_EQ(o.tls_server_name, "localhost");
}

TEST(ItestClientOptionsTest, DurationWithoutCountMeansUnlimitedMessages) {
  ClientOptions o = parse_ok({"--target", "h:1", "--method", "client_stream", "--duration", "6s",
                              "--rate", "300", "--size", "16384"});
  EXPECT_EQ(o.method, CallMethod::kClientStream);
  EXPECT_FALSE(o.count);
  EXPECT_EQ(o.duration, Duration(6s));
  EXPECT_EQ(o.rate, 300.0);
  EXPECT_EQ(o.size, 16384u);
}

TEST(ItestClientOptionsTest, BinMetadataValuesAreBase64Decoded) {
  ClientOptions o = parse_ok({"--target", "h:1", "--metadata", "x-a=1=2", "--metadata",
                              "x-b-bin=AP8=", "--trailing", "x-t-bin=AQ=="});
  ASSERT_EQ(o.metadata.size(), 2u);
  EXPECT_EQ(o.metadata[0], (std::pair<std::string, std::string>{"x-a", "1=2"}));
  EXPECT_EQ(o.metadata[1].second, std::string("\x00\xff", 2));
  ASSERT_EQ(o.trailing_metadata.size(), 1u);
  EXPECT_EQ(o.trailing_metadata[0].second, std::string("\x01", 1));
}

TEST(ItestClientOptionsTest, ParsesDurationsAndExpectStatus) {
  ClientOptions o = parse_ok({"--target", "h:1", "--deadline", "2s", "--service-time", "40ms",
                              "--cancel-after", "150ms", "--expect-status", "4"});
  EXPECT_EQ(o.deadline, Duration(2s));
  EXPECT_EQ(o.service_time, Duration(40ms));
  EXPECT_EQ(o.cancel_after, Duration(150ms));
  EXPECT_EQ(o.expect_status, 4);
}

TEST(ItestClientOptionsTest, UsageErrorsExitTwo) {
  EXPECT_EQ(parse_error({}), 2);                                           // no --target
  EXPECT_EQ(parse_error({"--target", "h:1", "--method", "teleport"}), 2);  // unknown method
  EXPECT_EQ(parse_error({"--target", "h:1", "--deadline", "soon"}), 2);
  EXPECT_EQ(parse_error({"--target", "h:1", "--metadata", "novalue"}), 2);
  EXPECT_EQ(parse_error({"--target", "h:1", "--metadata", "=v"}), 2);
  EXPECT_EQ(parse_error({"--target", "h:1", "--metadata", "k-bin=***"}), 2);
  EXPECT_EQ(parse_error({"--target", "h:1", "--metadata", "Upper=v"}), 2);
  EXPECT_EQ(parse_error({"--target", "h:1", "--trailing", "x-a=tab\there"}), 2);
  EXPECT_EQ(parse_error({"--target", "h:1", "--rate", "-5"}), 2);
  EXPECT_EQ(parse_error({"--target", "h:1", "--bogus"}), 2);
}

TEST(ItestClientOptionsTest, HelpExitsZero) { EXPECT_EQ(parse_error({"--help"}), 0); }

}  // namespace
}  // namespace sluice::itest
