#include "src/queue/resp_value.h"

#include <gtest/gtest.h>

#include "src/queue/resp_parser.h"

namespace sluice::queue {
namespace {

TEST(RespValueTest, WritesEveryTypeInRespTwoWireForm) {
  EXPECT_EQ(RespValue::simple("OK").to_resp(), "+OK\r\n");
  EXPECT_EQ(RespValue::error("ERR x").to_resp(), "-ERR x\r\n");
  EXPECT_EQ(RespValue::integer(-3).to_resp(), ":-3\r\n");
  EXPECT_EQ(RespValue::bulk(std::string("a\0b", 3)).to_resp(), std::string("$3\r\na\0b\r\n", 9));
  EXPECT_EQ(RespValue::null().to_resp(), "$-1\r\n");
  EXPECT_EQ(RespValue::array({RespValue::integer(1), RespValue::array({})}).to_resp(),
            "*2\r\n:1\r\n*0\r\n");
}

TEST(RespValueTest, WhatItWritesParsesBackToTheSameValue) {
  const RespValue v =
      RespValue::array({RespValue::bulk("x\r\ny"), RespValue::null(), RespValue::error("E"),
                        RespValue::array({RespValue::simple("s"), RespValue::integer(INT64_MAX)})});
  RespParser p;
  p.feed(v.to_resp());
  RespValue back;
  ASSERT_EQ(p.next(back), RespParser::Status::Value);
  EXPECT_EQ(back, v);
}

TEST(RespValueTest, DebugStringEscapesBinaryBytes) {
  const RespValue v =
      RespValue::array({RespValue::bulk(std::string("a\"\x01", 3)), RespValue::integer(2),
                        RespValue::null(), RespValue::error("ERR e"), RespValue::simple("OK")});
  EXPECT_EQ(v.debug_string(), "[\"a\\\"\\x01\", 2, nil, (error) ERR e, OK]");
}

TEST(RespValueTest, TypePredicatesFollowTheType) {
  EXPECT_TRUE(RespValue::bulk("").is_string());
  EXPECT_TRUE(RespValue::simple("").is_string());
  EXPECT_FALSE(RespValue::error("").is_string());
  EXPECT_TRUE(RespValue().is_null());
  EXPECT_TRUE(RespValue::array({}).is_array());
  EXPECT_TRUE(RespValue::integer(0).is_integer());
  EXPECT_STREQ(resp_type_name(RespValue::Type::BulkString), "bulk string");
}

}  // namespace
}  // namespace sluice::queue
