// The replies below are byte for byte what redis-server 7.0.15 sent (captured with a raw
// socket), so these tests pin the shapes the parsers rely on.
#include "src/queue/redis_replies.h"

#include <gtest/gtest.h>

#include "src/queue/resp_parser.h"

namespace sluice::queue {
namespace {

RespValue resp(std::string_view wire) {
  RespParser p;
  p.feed(wire);
  RespValue v;
  EXPECT_EQ(p.next(v), RespParser::Status::Value) << wire;
  return v;
}

TEST(RedisRepliesTest, XreadgroupGivesEntriesWithFieldsInOrder) {
  const auto r = parse_xreadgroup(resp(
      "*1\r\n*2\r\n$2\r\nst\r\n*2\r\n*2\r\n$15\r\n1796157987215-0\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n"
      "$1\r\nb\r\n$0\r\n\r\n*2\r\n$15\r\n1796157987266-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0], (StreamEntry{"1796157987215-0", {{"a", "1"}, {"b", ""}}, false}));
  EXPECT_EQ((*r)[1], (StreamEntry{"1796157987266-0", {{"a", "2"}}, false}));
}

TEST(RedisRepliesTest, XreadgroupNilIsNoEntries) {
  const auto r = parse_xreadgroup(resp("*-1\r\n"));  // BLOCK timed out
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  const auto empty_history = parse_xreadgroup(resp("*1\r\n*2\r\n$2\r\nst\r\n*0\r\n"));
  ASSERT_TRUE(empty_history.ok());
  EXPECT_TRUE(empty_history->empty());
}

TEST(RedisRepliesTest, XreadgroupHistoryMarksDeletedEntries) {
  // XREADGROUP ... STREAMS s2 0 after XDEL 1-1 of a pending entry: [id, nil].
  const auto r = parse_xreadgroup(
      resp("*1\r\n*2\r\n$2\r\ns2\r\n*2\r\n*2\r\n$3\r\n1-1\r\n*-1\r\n*2\r\n$3\r\n1-2\r\n*2\r\n"
           "$1\r\na\r\n$1\r\n2\r\n"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_TRUE((*r)[0].deleted);
  EXPECT_EQ((*r)[0].id, "1-1");
  EXPECT_FALSE((*r)[1].deleted);
}

TEST(RedisRepliesTest, XautoclaimHasCursorEntriesAndDeletedIds) {
  const auto r = parse_xautoclaim(
      resp("*3\r\n$3\r\n0-0\r\n*1\r\n*2\r\n$3\r\n1-2\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n*1\r\n$3\r\n"
           "1-1\r\n"),
      false);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->next_cursor, "0-0");
  ASSERT_EQ(r->entries.size(), 1u);
  EXPECT_EQ(r->entries[0], (StreamEntry{"1-2", {{"a", "2"}}, false}));
  EXPECT_EQ(r->deleted_ids, std::vector<std::string>{"1-1"});
  // A scan cut short by COUNT: cursor to continue from, nothing claimed.
  const auto partial =
      parse_xautoclaim(resp("*3\r\n$3\r\n1-2\r\n*0\r\n*1\r\n$3\r\n1-1\r\n"), false);
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->next_cursor, "1-2");
  EXPECT_TRUE(partial->entries.empty());
}

TEST(RedisRepliesTest, XautoclaimJustidGivesIdsOnly) {
  const auto r =
      parse_xautoclaim(resp("*3\r\n$3\r\n0-0\r\n*2\r\n$3\r\n1-2\r\n$3\r\n1-3\r\n*0\r\n"), true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->entries.size(), 2u);
  EXPECT_EQ(r->entries[1].id, "1-3");
  EXPECT_TRUE(r->entries[1].fields.empty());
  EXPECT_TRUE(r->deleted_ids.empty());
}

TEST(RedisRepliesTest, XautoclaimOfRedisSixIsRefusedByName) {
  const auto r = parse_xautoclaim(resp("*2\r\n$3\r\n0-0\r\n*0\r\n"), false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, RedisErrorKind::BadReply);
  EXPECT_NE(r.error().message.find("Redis >= 7.0"), std::string::npos);
}

TEST(RedisRepliesTest, XpendingSummaryReadsPerConsumerCountsGivenAsStrings) {
  const auto r = parse_xpending_summary(
      resp("*4\r\n:2\r\n$15\r\n1796157987215-0\r\n$15\r\n1796157987266-0\r\n*1\r\n*2\r\n$2\r\n"
           "c1\r\n$1\r\n2\r\n"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->count, 2);
  EXPECT_EQ(r->min_id, "1796157987215-0");
  EXPECT_EQ(r->max_id, "1796157987266-0");
  ASSERT_EQ(r->consumers.size(), 1u);
  EXPECT_EQ(r->consumers[0], (std::pair<std::string, int64_t>("c1", 2)));
}

TEST(RedisRepliesTest, XpendingSummaryOfAnEmptyGroupHasNils) {
  const auto r = parse_xpending_summary(resp("*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->count, 0);
  EXPECT_TRUE(r->min_id.empty());
  EXPECT_TRUE(r->consumers.empty());
}

TEST(RedisRepliesTest, XpendingExtendedGivesIdleTimesAndDeliveryCounts) {
  const auto r = parse_xpending_entries(
      resp("*2\r\n*4\r\n$3\r\n1-2\r\n$2\r\nc3\r\n:50\r\n:3\r\n*4\r\n$3\r\n1-3\r\n$2\r\nc2\r\n"
           ":273\r\n:1\r\n"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0], (PendingEntry{"1-2", "c3", 50, 3}));
  EXPECT_EQ((*r)[1], (PendingEntry{"1-3", "c2", 273, 1}));
}

TEST(RedisRepliesTest, XinfoGroupsReadsLagAndKeepsNilsAsUnknown) {
  const auto r = parse_xinfo_groups(resp(
      "*2\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:3\r\n$7\r\npending\r\n:0\r\n"
      "$17\r\nlast-delivered-id\r\n$3\r\n1-3\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:1\r\n"
      "*12\r\n$4\r\nname\r\n$2\r\ng2\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n"
      "$17\r\nlast-delivered-id\r\n$15\r\n1796157997137-0\r\n$12\r\nentries-read\r\n$-1\r\n"
      "$3\r\nlag\r\n:0\r\n"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  const GroupInfo& g = (*r)[0];
  EXPECT_EQ(g.name, "g");
  EXPECT_EQ(g.consumers, 3);
  EXPECT_EQ(g.pending, 0);
  EXPECT_EQ(g.last_delivered_id, "1-3");
  EXPECT_EQ(g.entries_read, 3);
  EXPECT_EQ(g.lag, 1);
  EXPECT_FALSE((*r)[1].entries_read.has_value());
  EXPECT_EQ((*r)[1].lag, 0);
}

TEST(RedisRepliesTest, BlpopGivesKeyAndValueOrNothingOnTimeout) {
  const auto r = parse_blpop(resp("*2\r\n$2\r\nrk\r\n$2\r\nv1\r\n"));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->key, "rk");
  EXPECT_EQ((*r)->value, "v1");
  const auto none = parse_blpop(resp("*-1\r\n"));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(RedisRepliesTest, LpopWithCountGivesValuesOrNothing) {
  const auto r = parse_string_array(resp("*2\r\n$1\r\na\r\n$1\r\nb\r\n"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(parse_string_array(resp("*-1\r\n"))->empty());
}

TEST(RedisRepliesTest, InfoIsParsedIntoNumbers) {
  const auto r = parse_info(RespValue::bulk(
      "# Memory\r\nused_memory:1394528\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n"
      "\r\n# CPU\r\nused_cpu_sys:0.013234\r\nused_cpu_user:0.033085\r\n"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->number("used_memory"), 1394528.0);
  EXPECT_EQ(r->number("maxmemory"), 0.0);
  EXPECT_DOUBLE_EQ(*r->number("used_cpu_sys"), 0.013234);
  EXPECT_DOUBLE_EQ(*r->number("used_cpu_user"), 0.033085);
  EXPECT_EQ(r->get("maxmemory_policy"), "noeviction");
  EXPECT_FALSE(r->number("maxmemory_policy").has_value());
  EXPECT_FALSE(r->number("absent").has_value());
  EXPECT_EQ(r->fields().size(), 5u);
}

TEST(RedisRepliesTest, SimpleRepliesCheckTheirType) {
  EXPECT_TRUE(parse_ok(resp("+OK\r\n")).ok());
  EXPECT_FALSE(parse_ok(resp("+QUEUED\r\n")).ok());
  EXPECT_EQ(*parse_integer(resp(":3\r\n")), 3);
  EXPECT_FALSE(parse_integer(resp("$1\r\n3\r\n")).ok());
  EXPECT_EQ(*parse_string(resp("$3\r\n1-1\r\n")), "1-1");
  EXPECT_FALSE(parse_string(resp("$-1\r\n")).ok());
}

TEST(RedisRepliesTest, UnexpectedShapesAreBadReplyErrorsNotCrashes) {
  const std::vector<std::string> shapes = {
      ":1\r\n",
      "$1\r\nx\r\n",
      "*1\r\n:1\r\n",
      "*1\r\n*1\r\n$1\r\ns\r\n",
      "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$1\r\ni\r\n*1\r\n$1\r\nf\r\n",   // odd field list
      "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n:1\r\n*0\r\n",                   // integer id
      "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$1\r\ni\r\n*2\r\n:1\r\n:2\r\n",  // integer field
  };
  for (const std::string& wire : shapes) {
    const RespValue v = resp(wire);
    const auto a = parse_xreadgroup(v);
    EXPECT_FALSE(a.ok()) << wire;
    if (!a.ok()) {
      EXPECT_EQ(a.error().kind, RedisErrorKind::BadReply);
    }
    EXPECT_FALSE(parse_xautoclaim(v, false).ok()) << wire;
    EXPECT_FALSE(parse_xpending_summary(v).ok()) << wire;
  }
  EXPECT_FALSE(
      parse_xpending_entries(resp("*1\r\n*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\n1\r\n:1\r\n")).ok());
  EXPECT_FALSE(parse_xinfo_groups(resp("*1\r\n*2\r\n$3\r\nlag\r\n:1\r\n")).ok());  // no name
  EXPECT_FALSE(parse_xpending_summary(resp("*4\r\n:1\r\n$1\r\na\r\n$1\r\nb\r\n*1\r\n*2\r\n"
                                           "$1\r\nc\r\n$1\r\nx\r\n"))
                   .ok());  // count not a number
  EXPECT_FALSE(parse_info(resp(":1\r\n")).ok());
}

}  // namespace
}  // namespace sluice::queue
