#include "src/queue/redis_command.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace sluice::queue {
namespace {

TEST(RedisCommandTest, EncodesAnArrayOfBulkStrings) {
  RedisCommand cmd("SET");
  cmd.arg("key").arg("value");
  EXPECT_EQ(cmd.encoded(), "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n");
  EXPECT_EQ(cmd.argc(), 3u);
  EXPECT_EQ(cmd.name(), "SET");
  EXPECT_EQ(cmd.encoded_size(), cmd.encoded().size());
}

TEST(RedisCommandTest, ArgumentsAreBinarySafe) {
  const std::string bytes("\r\n\0$*\xff", 6);
  RedisCommand cmd("LPUSH");
  cmd.arg("k").arg(bytes).arg("");
  EXPECT_EQ(cmd.encoded(),
            std::string("*4\r\n$5\r\nLPUSH\r\n$1\r\nk\r\n$6\r\n") + bytes + "\r\n$0\r\n\r\n");
}

TEST(RedisCommandTest, IntegersGoAsDecimalText) {
  RedisCommand cmd("X");
  cmd.arg(int64_t{-5}).arg(uint64_t{18446744073709551615u}).arg(7).arg(std::size_t{0});
  EXPECT_EQ(cmd.encoded(),
            "*5\r\n$1\r\nX\r\n$2\r\n-5\r\n$20\r\n18446744073709551615\r\n$1\r\n7\r\n$1\r\n0\r\n");
}

TEST(RedisCommandTest, AppendsToAnExistingBuffer) {
  std::string out = "prefix";
  RedisCommand("PING").append_to(out);
  EXPECT_EQ(out, "prefix*1\r\n$4\r\nPING\r\n");
  EXPECT_EQ(RedisCommand("PING").encoded_size(), 14u);
}

TEST(RedisCommandTest, EncodedSizeCountsMultiDigitArgumentCounts) {
  RedisCommand cmd("DEL");
  for (int i = 0; i < 11; ++i) cmd.arg("k");
  EXPECT_EQ(cmd.encoded_size(), cmd.encoded().size());
  EXPECT_EQ(cmd.encoded().substr(0, 5), "*12\r\n");
}

}  // namespace
}  // namespace sluice::queue
