#include "src/queue/redis_error.h"

#include <gtest/gtest.h>

namespace sluice::queue {
namespace {

TEST(RedisErrorTest, CodeIsTheFirstWordOfAServerError) {
  const RedisError e{RedisErrorKind::Server, "NOGROUP No such key 's' or consumer group 'g'"};
  EXPECT_EQ(e.code(), "NOGROUP");
  EXPECT_TRUE(e.is_server("NOGROUP"));
  EXPECT_FALSE(e.is_server("BUSYGROUP"));
  EXPECT_EQ(e.to_string(), "NOGROUP No such key 's' or consumer group 'g'");
  EXPECT_EQ((RedisError{RedisErrorKind::Server, "LOADING"}).code(), "LOADING");
}

TEST(RedisErrorTest, TransportErrorsHaveNoCodeAndSayTheirKind) {
  const RedisError e{RedisErrorKind::ConnectionLost, "closed by Redis"};
  EXPECT_EQ(e.code(), "");
  EXPECT_FALSE(e.is_server("closed"));
  EXPECT_EQ(e.to_string(), "connection lost: closed by Redis");
  EXPECT_EQ((RedisError{RedisErrorKind::Timeout, ""}).to_string(), "timeout");
}

TEST(RedisErrorTest, OnlyErrorsRaisedBeforeSendingAreNeverSent) {
  EXPECT_TRUE((RedisError{RedisErrorKind::NotConnected, ""}).never_sent());
  EXPECT_TRUE((RedisError{RedisErrorKind::Overloaded, ""}).never_sent());
  EXPECT_TRUE((RedisError{RedisErrorKind::BadArgument, ""}).never_sent());
  EXPECT_FALSE((RedisError{RedisErrorKind::ConnectionLost, ""}).never_sent());
  EXPECT_FALSE((RedisError{RedisErrorKind::Timeout, ""}).never_sent());
  EXPECT_FALSE((RedisError{RedisErrorKind::Server, ""}).never_sent());
  EXPECT_FALSE((RedisError{RedisErrorKind::BadReply, ""}).never_sent());
}

}  // namespace
}  // namespace sluice::queue
