#include "src/core/grpc_status.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice {
namespace {

TEST(GrpcStatusTest, NamesEveryCodeCanonically) {
  EXPECT_STREQ(grpc_status_name(GrpcStatus::Ok), "OK");
  EXPECT_STREQ(grpc_status_name(GrpcStatus::DeadlineExceeded), "DEADLINE_EXCEEDED");
  EXPECT_STREQ(grpc_status_name(GrpcStatus::ResourceExhausted), "RESOURCE_EXHAUSTED");
  EXPECT_STREQ(grpc_status_name(GrpcStatus::Unavailable), "UNAVAILABLE");
  EXPECT_STREQ(grpc_status_name(GrpcStatus::Unauthenticated), "UNAUTHENTICATED");
}

TEST(GrpcStatusTest, ConvertsKnownCodesBothWays) {
  for (int code = 0; code < kGrpcStatusCount; ++code) {
    const auto status = grpc_status_from_int(code);
    ASSERT_TRUE(status.has_value()) << code;
    EXPECT_EQ(to_int(*status), code);
    EXPECT_NE(std::string(grpc_status_name(*status)), "");
  }
  EXPECT_FALSE(grpc_status_from_int(-1));
  EXPECT_FALSE(grpc_status_from_int(17));
}

}  // namespace
}  // namespace sluice
