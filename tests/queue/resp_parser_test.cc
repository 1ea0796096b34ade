#include "src/queue/resp_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::queue {
namespace {

using Status = RespParser::Status;

// Everything the parser returns for `input` fed in pieces cut at `cuts` (sorted offsets).
struct Outcome {
  std::vector<RespValue> values;
  Status last = Status::NeedMore;
};

Outcome parse_split(std::string_view input, const std::vector<std::size_t>& cuts,
                    RespLimits limits = {}) {
  RespParser p(limits);
  Outcome o;
  std::size_t from = 0;
  auto drain = [&] {
    RespValue v;
    for (;;) {
      o.last = p.next(v);
      if (o.last != Status::Value) return;
      o.values.push_back(std::move(v));
    }
  };
  for (std::size_t cut : cuts) {
    p.feed(input.substr(from, cut - from));
    from = cut;
    drain();
  }
  p.feed(input.substr(from));
  drain();
  return o;
}

Outcome parse_whole(std::string_view input, RespLimits limits = {}) {
  return parse_split(input, {}, limits);
}

RespValue parse_one(std::string_view input) {
  const Outcome o = parse_whole(input);
  EXPECT_EQ(o.values.size(), 1u) << input;
  EXPECT_EQ(o.last, Status::NeedMore);
  return o.values.empty() ? RespValue() : o.values[0];
}

TEST(RespParserTest, ParsesEveryRespTwoType) {
  EXPECT_EQ(parse_one("+OK\r\n"), RespValue::simple("OK"));
  EXPECT_EQ(parse_one("-ERR unknown command\r\n"), RespValue::error("ERR unknown command"));
  EXPECT_EQ(parse_one(":42\r\n"), RespValue::integer(42));
  EXPECT_EQ(parse_one(":-9223372036854775808\r\n"), RespValue::integer(INT64_MIN));
  EXPECT_EQ(parse_one("$5\r\nhello\r\n"), RespValue::bulk("hello"));
  EXPECT_EQ(parse_one("$0\r\n\r\n"), RespValue::bulk(""));
  EXPECT_EQ(parse_one("$-1\r\n"), RespValue::null());
  EXPECT_EQ(parse_one("*-1\r\n"), RespValue::null());
  EXPECT_EQ(parse_one("*0\r\n"), RespValue::array({}));
  EXPECT_EQ(parse_one("*3\r\n:1\r\n$1\r\na\r\n$-1\r\n"),
            RespValue::array({RespValue::integer(1), RespValue::bulk("a"), RespValue::null()}));
}

TEST(RespParserTest, BulkStringsAreBinarySafe) {
  const std::string bytes("a\r\nb\0c\xff", 7);
  const RespValue v = parse_one("$7\r\n" + bytes + "\r\n");
  EXPECT_EQ(v.str(), bytes);
}

TEST(RespParserTest, ParsesNestedArraysWithErrorsAndNullsInside) {
  const RespValue v = parse_one("*2\r\n*2\r\n-WRONGTYPE x\r\n*0\r\n*1\r\n*-1\r\n");
  EXPECT_EQ(v, RespValue::array(
                   {RespValue::array({RespValue::error("WRONGTYPE x"), RespValue::array({})}),
                    RespValue::array({RespValue::null()})}));
}

TEST(RespParserTest, ReturnsSeveralRepliesFromOneFeedInOrder) {
  const Outcome o = parse_whole("+OK\r\n:1\r\n$1\r\nx\r\n*1\r\n:2\r\n");
  ASSERT_EQ(o.values.size(), 4u);
  EXPECT_EQ(o.values[0], RespValue::simple("OK"));
  EXPECT_EQ(o.values[1], RespValue::integer(1));
  EXPECT_EQ(o.values[2], RespValue::bulk("x"));
  EXPECT_EQ(o.values[3], RespValue::array({RespValue::integer(2)}));
}

TEST(RespParserTest, WaitsForMoreWhenAReplyIsIncomplete) {
  for (const char* partial : {"+O", "+OK\r", ":1", "$5\r\nhel", "$5\r\nhello\r", "*2\r\n:1\r\n",
                              "*1\r\n*1\r\n", "$", "*"}) {
    const Outcome o = parse_whole(partial);
    EXPECT_TRUE(o.values.empty()) << partial;
    EXPECT_EQ(o.last, Status::NeedMore) << partial;
  }
}

// A real XREADGROUP reply (captured from redis-server 7.0) followed by more replies: every way
// of cutting it in two, and byte by byte, gives the same replies.
TEST(RespParserTest, AnySplitPointGivesTheSameReplies) {
  const std::string input =
      "*1\r\n*2\r\n$2\r\nst\r\n*2\r\n*2\r\n$15\r\n1796157987215-0\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n"
      "$1\r\nb\r\n$0\r\n\r\n*2\r\n$15\r\n1796157987266-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n"
      "+OK\r\n-ERR x\r\n:7\r\n$-1\r\n*-1\r\n*0\r\n$4\r\n\r\n\r\n\r\n";
  const Outcome whole = parse_whole(input);
  ASSERT_EQ(whole.values.size(), 8u);
  EXPECT_EQ(whole.values[7], RespValue::bulk("\r\n\r\n"));
  for (std::size_t cut = 0; cut <= input.size(); ++cut) {
    const Outcome o = parse_split(input, {cut});
    EXPECT_EQ(o.values, whole.values) << "cut at " << cut;
    EXPECT_EQ(o.last, Status::NeedMore);
  }
  // And every pair of cuts: lines and bulk bodies split in three.
  for (std::size_t a = 0; a <= input.size(); a += 3) {
    for (std::size_t b = a; b <= input.size(); b += 7) {
      EXPECT_EQ(parse_split(input, {a, b}).values, whole.values) << a << "," << b;
    }
  }
  std::vector<std::size_t> every_byte;
  for (std::size_t i = 1; i < input.size(); ++i) every_byte.push_back(i);
  EXPECT_EQ(parse_split(input, every_byte).values, whole.values);
}

TEST(RespParserTest, RejectsMalformedInputWithAnError) {
  const std::vector<std::string> bad = {
      "?x\r\n",                     // unknown type byte
      "%1\r\n",                     // RESP3 map: never asked for
      "_\r\n",                      // RESP3 null
      "+OK\n",                      // LF without CR
      "\r\n",                       // empty line: no type byte
      "+a\rb\r\n",                  // CR inside a line
      ":\r\n",                      // empty integer
      ":12a\r\n",                   // not a number
      ":+1\r\n",                    // sign not allowed
      ":99999999999999999999\r\n",  // overflows int64
      "$-2\r\n",                    // only -1 means null
      "$abc\r\n",
      "$3\r\nabcd\r\n",    // body longer than declared
      "$3\r\nab\r\n\r\n",  // CRLF where the body's last byte should be... then no CRLF
      "*-2\r\n",
      "*x\r\n",
  };
  for (const std::string& input : bad) {
    RespParser p;
    p.feed(input);
    RespValue v;
    EXPECT_EQ(p.next(v), Status::Error) << input;
    EXPECT_FALSE(p.error().empty()) << input;
  }
}

TEST(RespParserTest, AnErrorIsStickyUntilReset) {
  RespParser p;
  p.feed("!bad\r\n");
  RespValue v;
  ASSERT_EQ(p.next(v), Status::Error);
  p.feed("+OK\r\n");
  EXPECT_EQ(p.next(v), Status::Error);
  p.reset();
  EXPECT_TRUE(p.error().empty());
  p.feed("+OK\r\n");
  ASSERT_EQ(p.next(v), Status::Value);
  EXPECT_EQ(v, RespValue::simple("OK"));
}

TEST(RespParserTest, ResetDropsAPartialReply) {
  RespParser p;
  p.feed("*2\r\n:1\r\n$10\r\nabc");
  RespValue v;
  ASSERT_EQ(p.next(v), Status::NeedMore);
  EXPECT_GT(p.buffered(), 0u);
  p.reset();
  EXPECT_EQ(p.buffered(), 0u);
  p.feed(":5\r\n");
  ASSERT_EQ(p.next(v), Status::Value);
  EXPECT_EQ(v, RespValue::integer(5));
}

TEST(RespParserTest, RejectsABulkLengthBeyondTheLimitBeforeItsBytesArrive) {
  RespLimits limits;
  limits.max_bulk_bytes = 10;
  EXPECT_EQ(parse_whole("$10\r\n0123456789\r\n", limits).values.size(), 1u);
  EXPECT_EQ(parse_whole("$11\r\n", limits).last, Status::Error);
  // Absurd lengths are refused without allocating anything.
  EXPECT_EQ(parse_whole("$9223372036854775807\r\n").last, Status::Error);
}

TEST(RespParserTest, RejectsAnArrayLengthBeyondTheLimit) {
  RespLimits limits;
  limits.max_array_elements = 3;
  EXPECT_EQ(parse_whole("*3\r\n:1\r\n:2\r\n:3\r\n", limits).values.size(), 1u);
  EXPECT_EQ(parse_whole("*4\r\n", limits).last, Status::Error);
  EXPECT_EQ(parse_whole("*9223372036854775807\r\n").last, Status::Error);
}

TEST(RespParserTest, RejectsNestingDeeperThanTheLimit) {
  RespLimits limits;
  limits.max_depth = 3;
  EXPECT_EQ(parse_whole("*1\r\n*1\r\n*1\r\n:1\r\n", limits).values.size(), 1u);
  EXPECT_EQ(parse_whole("*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", limits).last, Status::Error);
  EXPECT_EQ(parse_whole("*1\r\n*1\r\n*1\r\n*0\r\n", limits).last, Status::Error);
  // The default allows what XREADGROUP sends (5 levels) and refuses a deep bomb.
  std::string bomb;
  for (int i = 0; i < 100000; ++i) bomb += "*1\r\n";
  EXPECT_EQ(parse_whole(bomb).last, Status::Error);
}

TEST(RespParserTest, RejectsALineLongerThanTheLimitWhereverItIsCut) {
  RespLimits limits;
  limits.max_line_bytes = 8;
  EXPECT_EQ(parse_whole("+12345678\r\n", limits).values.size(), 1u);
  EXPECT_EQ(parse_whole("+123456789\r\n", limits).last, Status::Error);
  // Without its CRLF yet: refused once it is certainly too long, not buffered forever.
  const std::string no_end = std::string("+").append(100, 'a');
  EXPECT_EQ(parse_whole(no_end, limits).last, Status::Error);
  for (std::size_t cut = 0; cut <= 11; ++cut) {
    EXPECT_EQ(parse_split("+123456789\r\n", {cut}, limits).last, Status::Error) << cut;
    EXPECT_EQ(parse_split("+12345678\r\n", {cut}, limits).values.size(), 1u) << cut;
  }
}

TEST(RespParserTest, RejectsAReplyWithMoreValuesOrBytesThanTheLimit) {
  RespLimits limits;
  limits.max_reply_elements = 4;  // the array counts as one
  EXPECT_EQ(parse_whole("*3\r\n:1\r\n:2\r\n:3\r\n", limits).values.size(), 1u);
  EXPECT_EQ(parse_whole("*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n", limits).last, Status::Error);
  // The budget is per reply: many small replies are fine.
  EXPECT_EQ(parse_whole("*3\r\n:1\r\n:2\r\n:3\r\n*3\r\n:1\r\n:2\r\n:3\r\n", limits).values.size(),
            2u);
  RespLimits bytes;
  bytes.max_reply_bytes = 20;
  EXPECT_EQ(parse_whole("*1\r\n$5\r\nhello\r\n", bytes).values.size(), 1u);  // 15 bytes
  EXPECT_EQ(parse_whole("*1\r\n$10\r\n0123456789\r\n", bytes).last, Status::Error);
}

TEST(RespParserTest, LargeBulkStringArrivingInSmallPiecesIsAssembledOnce) {
  const std::string body(1 << 20, 'x');
  // Appended, not operator+: GCC 12 warns falsely (-Wrestrict) on "literal" + string chains.
  std::string input = "$";
  input += std::to_string(body.size());
  input += "\r\n";
  input += body;
  input += "\r\n";
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1000; i < input.size(); i += 1000) cuts.push_back(i);
  const Outcome o = parse_split(input, cuts);
  ASSERT_EQ(o.values.size(), 1u);
  EXPECT_EQ(o.values[0].str(), body);
}

}  // namespace
}  // namespace sluice::queue
