#include "src/proxy/grpc_util.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

using namespace std::chrono_literals;

TEST(GrpcTimeoutTest, ParsesEveryUnit) {
  EXPECT_EQ(parse_grpc_timeout("1H"), Duration(1h));
  EXPECT_EQ(parse_grpc_timeout("2M"), Duration(2min));
  EXPECT_EQ(parse_grpc_timeout("3S"), Duration(3s));
  EXPECT_EQ(parse_grpc_timeout("250m"), Duration(250ms));
  EXPECT_EQ(parse_grpc_timeout("7u"), Duration(7us));
  EXPECT_EQ(parse_grpc_timeout("9n"), Duration(9ns));
  EXPECT_EQ(parse_grpc_timeout("99999999S"), Duration(99999999s));
  EXPECT_EQ(parse_grpc_timeout("0m"), Duration(0));
}

TEST(GrpcTimeoutTest, CapsValuesThatDoNotFitInNanoseconds) {
  EXPECT_EQ(parse_grpc_timeout("99999999H"), kMaxGrpcTimeout);
  EXPECT_EQ(parse_grpc_timeout("99999999M"), kMaxGrpcTimeout);
  EXPECT_EQ(parse_grpc_timeout("876000H"), kMaxGrpcTimeout);  // exactly the cap
  EXPECT_EQ(parse_grpc_timeout("875999H"), Duration(875999h));
}

TEST(GrpcTimeoutTest, RejectsMalformedValues) {
  EXPECT_FALSE(parse_grpc_timeout(""));
  EXPECT_FALSE(parse_grpc_timeout("S"));
  EXPECT_FALSE(parse_grpc_timeout("10"));
  EXPECT_FALSE(parse_grpc_timeout("123456789S"));  // 9 digits
  EXPECT_FALSE(parse_grpc_timeout("10s"));         // unit is case-sensitive
  EXPECT_FALSE(parse_grpc_timeout("-1S"));
  EXPECT_FALSE(parse_grpc_timeout("1.5S"));
  EXPECT_FALSE(parse_grpc_timeout(" 1S"));
}

TEST(GrpcTimeoutTest, FormatsWithAtMostEightDigitsNeverRoundingUp) {
  EXPECT_EQ(format_grpc_timeout(Duration(1500ns)), "1500n");
  EXPECT_EQ(format_grpc_timeout(Duration(1500ms)), "1500000u");
  EXPECT_EQ(format_grpc_timeout(Duration(5min)), "300000m");
  EXPECT_EQ(format_grpc_timeout(Duration(30h)), "108000S");
  EXPECT_EQ(format_grpc_timeout(Duration(0)), "0n");
  EXPECT_EQ(format_grpc_timeout(Duration(-5ms)), "0n");
  // 123.456789123 s: ns and us would need 12 and 9 digits; milliseconds truncate down.
  EXPECT_EQ(format_grpc_timeout(Duration(123456789123ns)), "123456m");
  for (Duration d : {Duration(1ns), Duration(999999999ns), Duration(12345678901ns),
                     Duration(std::chrono::hours(2000))}) {
    const std::string s = format_grpc_timeout(d);
    EXPECT_LE(s.size(), 9u) << s;
    const auto back = parse_grpc_timeout(s);
    ASSERT_TRUE(back.has_value()) << s;
    EXPECT_LE(*back, d) << s;
  }
}

TEST(GrpcMessageTest, PercentEncodesNonPrintableAndPercent) {
  EXPECT_EQ(percent_encode_grpc_message("queue wait budget 8ms exceeded"),
            "queue wait budget 8ms exceeded");
  EXPECT_EQ(percent_encode_grpc_message("100% full\n"), "100%25 full%0A");
  EXPECT_EQ(percent_encode_grpc_message("caf\xc3\xa9"), "caf%C3%A9");
  EXPECT_EQ(percent_decode_grpc_message("100%25 full%0A"), "100% full\n");
  EXPECT_EQ(percent_decode_grpc_message("bad%zz%4"), "bad%zz%4");
}

TEST(GrpcContentTypeTest, RecognisesGrpcVariants) {
  EXPECT_TRUE(is_grpc_content_type("application/grpc"));
  EXPECT_TRUE(is_grpc_content_type("application/grpc+proto"));
  EXPECT_TRUE(is_grpc_content_type("application/grpc;charset=utf-8"));
  EXPECT_FALSE(is_grpc_content_type("application/grpc-web"));
  EXPECT_FALSE(is_grpc_content_type("application/json"));
  EXPECT_FALSE(is_grpc_content_type(""));
}

TEST(HeaderFilterTest, DropsConnectionSpecificHeaders) {
  for (const char* h : {"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                        "upgrade", "http2-settings"}) {
    EXPECT_TRUE(is_hop_by_hop_header(h, "x")) << h;
  }
  EXPECT_FALSE(is_hop_by_hop_header("te", "trailers"));  // gRPC needs it
  EXPECT_TRUE(is_hop_by_hop_header("te", "gzip"));
  EXPECT_FALSE(is_hop_by_hop_header("grpc-timeout", "1S"));
  EXPECT_FALSE(is_hop_by_hop_header("x-custom-bin", "AAEC"));
  EXPECT_FALSE(is_hop_by_hop_header(":authority", "a"));
}

TEST(GrpcStatusTest, ParsesSmallIntegersOnly) {
  EXPECT_EQ(parse_grpc_status("0"), 0);
  EXPECT_EQ(parse_grpc_status("14"), 14);
  EXPECT_FALSE(parse_grpc_status(""));
  EXPECT_FALSE(parse_grpc_status("abc"));
  EXPECT_FALSE(parse_grpc_status("1234"));
}

}  // namespace
}  // namespace sluice
