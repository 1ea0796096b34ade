#include "src/queue/queue_reply.h"

#include <gtest/gtest.h>

namespace sluice::queue {
namespace {

QueueReply sample() {
  QueueReply r;
  r.call_id = "42";
  r.consumer = "pod-a";
  r.attempt = 2;
  r.grpc_status = 0;
  r.headers = {{":status", "200"}, {"content-type", "application/grpc"}};
  r.body = std::string("\0\0\0\0\x02\x08\x01", 7);
  r.trailers = {{"grpc-status", "0"}, {"x-debug-bin", std::string("\xff\0,", 3)}};
  return r;
}

TEST(QueueReplyTest, RoundTripsHeadersBodyAndTrailersUnchanged) {
  const QueueReply r = sample();
  const auto back = QueueReply::decode(r.encode());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
}

TEST(QueueReplyTest, RoundTripsALocalReplyWithoutHeadersOrBody) {
  QueueReply r;
  r.call_id = "7";
  r.consumer = "pod-b";
  r.grpc_status = 4;
  r.grpc_message = "deadline passed while queued (120 ms ago)";
  const auto back = QueueReply::decode(r.encode());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
  EXPECT_TRUE(back->headers.empty());
}

TEST(QueueReplyTest, IsReadableNetstringsStartingWithTheVersion) {
  EXPECT_EQ(sample().encode().substr(0, 26), "1:v,1:1,7:call_id,2:42,8:c");
}

TEST(QueueReplyTest, RejectsGarbageWithAnError) {
  for (const char* bad :
       {"", "garbage", "1:v,1:1,", "1:v,1:2,7:call_id,1:1,6:status,1:0,", "1:v,1:1,7:call_id,1:1,",
        "1:v,1:1,6:status,1:0,", "1:v,1:1,7:call_id,1:1,6:status,2:-1,",
        "1:v,1:1,7:call_id,1:1,6:status,1:0,7:headers,2:1:,",
        "1:v,1:1,7:call_id,1:1,6:status,1:0,6:status,1:0,",
        "1:v,1:1,7:call_id,1:1,6:status,1:0,7:attempt,1:0,"}) {
    EXPECT_FALSE(QueueReply::decode(bad).ok()) << bad;
  }
}

TEST(QueueReplyTest, IgnoresUnknownFields) {
  const std::string bytes = sample().encode() + "5:extra,3:yes,";
  const auto back = QueueReply::decode(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, sample());
}

}  // namespace
}  // namespace sluice::queue
