#include "src/proxy/grpc_health.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice {
namespace {

using namespace std::string_literals;

std::string frame(const std::string& message) {
  std::string f = "\0"s;
  const auto n = static_cast<uint32_t>(message.size());
  for (int shift = 24; shift >= 0; shift -= 8) f.push_back(static_cast<char>(n >> shift));
  return f + message;
}

TEST(GrpcHealthTest, RequestFrameIsAGrpcMessageHoldingTheServiceField) {
  // protobuf: field 1, wire type 2 (0x0a), length 10, "pkg.Orders".
  EXPECT_EQ(health_check_request_frame("pkg.Orders"), frame("\x0a\x0a"
                                                            "pkg.Orders"s));
}

TEST(GrpcHealthTest, AnEmptyServiceIsAnEmptyMessage) {
  EXPECT_EQ(health_check_request_frame(""), "\0\0\0\0\0"s);
}

TEST(GrpcHealthTest, ALongServiceNameGetsAMultiByteLength) {
  const std::string name(200, 'a');
  EXPECT_EQ(health_check_request_frame(name), frame("\x0a\xc8\x01"s + name));
}

TEST(GrpcHealthTest, ParsesEachServingStatus) {
  for (int status = 0; status <= 3; ++status) {
    const std::string message =
        status == 0 ? ""s : "\x08"s + static_cast<char>(status);  // proto3 omits 0
    const HealthCheckBody b = parse_health_check_body(frame(message));
    ASSERT_TRUE(b.status.has_value()) << b.error;
    EXPECT_EQ(*b.status, status);
  }
  EXPECT_EQ(serving_status_name(1), "SERVING");
  EXPECT_EQ(serving_status_name(2), "NOT_SERVING");
  EXPECT_EQ(serving_status_name(3), "SERVICE_UNKNOWN");
  EXPECT_EQ(serving_status_name(0), "UNKNOWN");
  EXPECT_EQ(serving_status_name(9), "status 9");
}

TEST(GrpcHealthTest, SkipsUnknownFieldsOfEveryWireType) {
  const std::string message =
      "\x10\x05"s  // field 2 varint
      "\x19"
      "12345678"s  // field 3 fixed64
      "\x22\x03"
      "abc"s  // field 4 length-delimited
      "\x2d"
      "1234"s       // field 5 fixed32
      "\x08\x02"s;  // status NOT_SERVING
  const HealthCheckBody b = parse_health_check_body(frame(message));
  ASSERT_TRUE(b.status.has_value()) << b.error;
  EXPECT_EQ(*b.status, 2);
}

TEST(GrpcHealthTest, MalformedBodiesSayWhatIsWrong) {
  EXPECT_EQ(parse_health_check_body("").error, "no HealthCheckResponse in the response");
  EXPECT_EQ(parse_health_check_body("\0\0\0"s).error, "truncated gRPC message");
  EXPECT_EQ(parse_health_check_body("\0\0\0\0\x05\x08"s).error, "truncated gRPC message");
  EXPECT_EQ(parse_health_check_body(frame("\x08\x01") + frame("\x08\x01")).error,
            "more than one message in a unary response");
  EXPECT_EQ(parse_health_check_body("\x01\0\0\0\x02\x08\x01"s).error,
            "compressed gRPC message (none was accepted)");
  EXPECT_EQ(parse_health_check_body(frame("\x08")).error,
            "HealthCheckResponse: truncated protobuf");
  EXPECT_EQ(parse_health_check_body(frame("\x22\x09"
                                          "abc"s))
                .error,
            "HealthCheckResponse: truncated protobuf");
  EXPECT_EQ(parse_health_check_body(frame("\x0b")).error,
            "HealthCheckResponse: unsupported protobuf wire type 3");
  EXPECT_FALSE(parse_health_check_body(frame("\x08")).status.has_value());
}

}  // namespace
}  // namespace sluice
