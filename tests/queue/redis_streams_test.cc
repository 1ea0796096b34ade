// RedisStreams against a real redis-server: the commands queue mode relies on, with the reply
// shapes Redis 7 really sends.
#include "src/queue/redis_streams.h"

#include <gtest/gtest.h>

#include <optional>

#include "src/queue/queue_envelope.h"
#include "src/queue/queue_reply.h"
#include "tests/queue/io_wait.h"
#include "tests/queue/redis_server.h"

namespace sluice::queue {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

class RedisStreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    conn_ = open();
    streams_.emplace(conn_);
  }

  std::shared_ptr<RedisConnection> open() {
    RedisConnection::Options o;
    o.port = server_.port();
    o.reconnect_min = 20ms;
    o.reconnect_max = 200ms;
    auto c = RedisConnection::create(io_, o);
    c->start();
    EXPECT_TRUE(run_until(io_, [&] { return c->connected(); }));
    return c;
  }

  // Starts an operation with a result callback and runs the loop until it completes.
  template <typename T, typename Start>
  RedisResult<T> wait(Start start) {
    std::optional<RedisResult<T>> out;
    start([&out](RedisResult<T> r) { out.emplace(std::move(r)); });
    EXPECT_TRUE(run_until(io_, [&] { return out.has_value(); }));
    if (!out) return RedisError{RedisErrorKind::Timeout, "test gave up"};
    return std::move(*out);
  }

  RedisResult<bool> create_group(RedisStreams& s) {
    return wait<bool>([&](auto cb) { s.create_group("work", "g", "0", cb); });
  }
  std::string add(const StreamFields& fields) {
    auto r = wait<std::string>([&](auto cb) { streams_->xadd("work", fields, std::nullopt, cb); });
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? *r : "";
  }
  std::vector<StreamEntry> read(std::string consumer, uint64_t count,
                                Duration block = Duration::zero(), std::string id = ">") {
    RedisStreams::ReadGroupArgs args{"work", "g", std::move(consumer), count, block, std::move(id)};
    auto r = wait<std::vector<StreamEntry>>([&](auto cb) { streams_->xreadgroup(args, cb); });
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? *r : std::vector<StreamEntry>{};
  }
  std::vector<PendingEntry> pending() {
    auto r = wait<std::vector<PendingEntry>>(
        [&](auto cb) { streams_->xpending("work", "g", RedisStreams::PendingQuery{}, cb); });
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? *r : std::vector<PendingEntry>{};
  }

  RedisServer server_;
  asio::io_context io_{1};
  std::shared_ptr<RedisConnection> conn_;
  std::optional<RedisStreams> streams_;
};

TEST_F(RedisStreamsTest, CreateGroupMakesTheStreamAndToleratesAnExistingGroup) {
  auto first = create_group(*streams_);
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_TRUE(*first);
  EXPECT_EQ(server_.command({"TYPE", "work"}).str(), "stream");
  auto again = create_group(*streams_);
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_FALSE(*again);  // BUSYGROUP is success here
}

TEST_F(RedisStreamsTest, AnEnvelopeTravelsThroughTheStreamByteExact) {
  ASSERT_TRUE(create_group(*streams_).ok());
  QueueEnvelope e;
  e.method = "/pkg.Svc/Get";
  e.call_id = "1";
  e.reply_to = "work:reply:f1";
  e.frontend = "f1";
  e.deadline_unix_ms = unix_ms_now() + 5000;
  e.enqueued_unix_ms = unix_ms_now();
  e.metadata = {{"auth-bin", std::string("\0\xff\r\n", 4)}, {"x-a", "1"}};
  e.body = std::string("\0\0\0\0\x01\x00", 6);
  const std::string id = add(e.encode());
  const auto entries = read("c1", 10);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].id, id);
  const auto back = QueueEnvelope::decode(entries[0].fields);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, e);
}

TEST_F(RedisStreamsTest, XreadgroupDeliversAtMostCountEntries) {
  ASSERT_TRUE(create_group(*streams_).ok());
  for (int i = 0; i < 5; ++i) add({{"n", std::to_string(i)}});
  EXPECT_EQ(read("c1", 2).size(), 2u);
  EXPECT_EQ(read("c1", 2).size(), 2u);
  const auto last = read("c1", 2);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].fields, (StreamFields{{"n", "4"}}));
  EXPECT_TRUE(read("c1", 2).empty());
  EXPECT_EQ(pending().size(), 5u);
}

TEST_F(RedisStreamsTest, XreadgroupWithCountZeroIsRefusedBeforeSending) {
  ASSERT_TRUE(create_group(*streams_).ok());
  add({{"n", "1"}});
  RedisStreams::ReadGroupArgs args{"work", "g", "c1", 0, Duration::zero(), ">"};
  auto r = wait<std::vector<StreamEntry>>([&](auto cb) { streams_->xreadgroup(args, cb); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, RedisErrorKind::BadArgument);
  EXPECT_TRUE(pending().empty());  // Redis would have delivered everything
}

TEST_F(RedisStreamsTest, BlockingReadReturnsNothingOnTimeoutAndWakesOnXadd) {
  ASSERT_TRUE(create_group(*streams_).ok());
  auto blocking = open();  // blocking reads get their own connection
  RedisStreams reader(blocking);
  const auto start = std::chrono::steady_clock::now();
  RedisStreams::ReadGroupArgs args{"work", "g", "c1", 10, 100ms, ">"};
  auto none = wait<std::vector<StreamEntry>>([&](auto cb) { reader.xreadgroup(args, cb); });
  ASSERT_TRUE(none.ok()) << none.error().to_string();
  EXPECT_TRUE(none->empty());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 90ms);

  args.block = 5s;
  std::optional<RedisResult<std::vector<StreamEntry>>> got;
  reader.xreadgroup(args, [&](auto r) { got.emplace(std::move(r)); });
  run_for(io_, 50ms);
  EXPECT_FALSE(got.has_value());
  add({{"n", "1"}});  // on the other connection, while the read blocks
  ASSERT_TRUE(run_until(io_, [&] { return got.has_value(); }));
  ASSERT_TRUE(got->ok());
  ASSERT_EQ((*got)->size(), 1u);
  EXPECT_EQ((**got)[0].fields, (StreamFields{{"n", "1"}}));
}

TEST_F(RedisStreamsTest, AckAndDeleteLeavesNeitherPendingNorStreamEntries) {
  ASSERT_TRUE(create_group(*streams_).ok());
  add({{"n", "1"}});
  add({{"n", "2"}});
  const auto entries = read("c1", 10);
  ASSERT_EQ(entries.size(), 2u);
  auto acked = wait<int64_t>([&](auto cb) {
    streams_->ack_and_delete("work", "g", {entries[0].id, entries[1].id}, cb);
  });
  ASSERT_TRUE(acked.ok()) << acked.error().to_string();
  EXPECT_EQ(*acked, 2);
  auto len = wait<int64_t>([&](auto cb) { streams_->xlen("work", cb); });
  ASSERT_TRUE(len.ok());
  EXPECT_EQ(*len, 0);
  EXPECT_TRUE(pending().empty());
  auto again = wait<int64_t>([&](auto cb) { streams_->xack("work", "g", {entries[0].id}, cb); });
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
}

TEST_F(RedisStreamsTest, XautoclaimTakesOverIdleEntriesOfADeadConsumer) {
  ASSERT_TRUE(create_group(*streams_).ok());
  add({{"n", "1"}});
  add({{"n", "2"}});
  ASSERT_EQ(read("dead", 10).size(), 2u);
  // Not idle long enough yet: nothing moves.
  auto early = wait<AutoClaimResult>(
      [&](auto cb) { streams_->xautoclaim("work", "g", "alive", 10s, "0-0", 10, false, cb); });
  ASSERT_TRUE(early.ok()) << early.error().to_string();
  EXPECT_TRUE(early->entries.empty());
  EXPECT_EQ(early->next_cursor, "0-0");

  run_for(io_, 60ms);
  auto r = wait<AutoClaimResult>(
      [&](auto cb) { streams_->xautoclaim("work", "g", "alive", 50ms, "0-0", 10, false, cb); });
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->entries.size(), 2u);
  EXPECT_EQ(r->entries[1].fields, (StreamFields{{"n", "2"}}));
  EXPECT_TRUE(r->deleted_ids.empty());
  for (const PendingEntry& p : pending()) {
    EXPECT_EQ(p.consumer, "alive");
    EXPECT_EQ(p.deliveries, 2);  // claimed without JUSTID: a second delivery
  }
}

TEST_F(RedisStreamsTest, XautoclaimReportsPendingEntriesDeletedFromTheStream) {
  ASSERT_TRUE(create_group(*streams_).ok());
  const std::string gone = add({{"n", "1"}});
  add({{"n", "2"}});
  ASSERT_EQ(read("dead", 10).size(), 2u);
  ASSERT_EQ(server_.command({"XDEL", "work", gone}).integer(), 1);
  // Trimming or XDEL can delete an entry still pending; Redis 7 lists it apart and drops it.
  auto r = wait<AutoClaimResult>(
      [&](auto cb) { streams_->xautoclaim("work", "g", "alive", 0ms, "0-0", 10, false, cb); });
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->deleted_ids, std::vector<std::string>{gone});
  ASSERT_EQ(r->entries.size(), 1u);
  EXPECT_EQ(pending().size(), 1u);
}

TEST_F(RedisStreamsTest, XclaimJustidKeepsALongCallsEntryWithoutCountingADelivery) {
  ASSERT_TRUE(create_group(*streams_).ok());
  const std::string id = add({{"n", "1"}});
  ASSERT_EQ(read("busy", 1).size(), 1u);
  run_for(io_, 80ms);
  ASSERT_GE(pending().at(0).idle_ms, 70);
  auto kept = wait<std::vector<std::string>>(
      [&](auto cb) { streams_->xclaim_justid("work", "g", "busy", 0ms, {id}, cb); });
  ASSERT_TRUE(kept.ok()) << kept.error().to_string();
  EXPECT_EQ(*kept, std::vector<std::string>{id});
  const PendingEntry p = pending().at(0);
  EXPECT_EQ(p.consumer, "busy");
  EXPECT_LT(p.idle_ms, 50);  // idle time reset: a 70 ms claim_after would not take it
  EXPECT_EQ(p.deliveries, 1);
  auto stolen = wait<AutoClaimResult>(
      [&](auto cb) { streams_->xautoclaim("work", "g", "thief", 70ms, "0-0", 10, true, cb); });
  ASSERT_TRUE(stolen.ok());
  EXPECT_TRUE(stolen->entries.empty());
}

TEST_F(RedisStreamsTest, XclaimMovesEntriesAndCountsADelivery) {
  ASSERT_TRUE(create_group(*streams_).ok());
  const std::string id = add({{"n", "1"}});
  ASSERT_EQ(read("a", 1).size(), 1u);
  auto r = wait<std::vector<StreamEntry>>(
      [&](auto cb) { streams_->xclaim("work", "g", "b", 0ms, {id}, cb); });
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].fields, (StreamFields{{"n", "1"}}));
  const PendingEntry p = pending().at(0);
  EXPECT_EQ(p.consumer, "b");
  EXPECT_EQ(p.deliveries, 2);
}

TEST_F(RedisStreamsTest, XpendingSummaryAndRangeReportConsumersAndDeliveries) {
  ASSERT_TRUE(create_group(*streams_).ok());
  auto empty = wait<PendingSummary>([&](auto cb) { streams_->xpending_summary("work", "g", cb); });
  ASSERT_TRUE(empty.ok()) << empty.error().to_string();
  EXPECT_EQ(empty->count, 0);
  const std::string a = add({{"n", "1"}});
  add({{"n", "2"}});
  add({{"n", "3"}});
  ASSERT_EQ(read("c1", 2).size(), 2u);
  ASSERT_EQ(read("c2", 1).size(), 1u);
  auto s = wait<PendingSummary>([&](auto cb) { streams_->xpending_summary("work", "g", cb); });
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->count, 3);
  EXPECT_EQ(s->min_id, a);
  EXPECT_EQ(s->consumers, (std::vector<std::pair<std::string, int64_t>>{{"c1", 2}, {"c2", 1}}));
  RedisStreams::PendingQuery q;
  q.consumer = "c1";
  q.count = 1;
  auto rows =
      wait<std::vector<PendingEntry>>([&](auto cb) { streams_->xpending("work", "g", q, cb); });
  ASSERT_TRUE(rows.ok()) << rows.error().to_string();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].id, a);
  EXPECT_EQ((*rows)[0].deliveries, 1);
  q.count = 10;
  q.min_idle = 10s;  // IDLE filter: nothing that old
  rows = wait<std::vector<PendingEntry>>([&](auto cb) { streams_->xpending("work", "g", q, cb); });
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows->empty());
}

TEST_F(RedisStreamsTest, XinfoGroupsReportsLagAndPending) {
  ASSERT_TRUE(create_group(*streams_).ok());
  for (int i = 0; i < 4; ++i) add({{"n", std::to_string(i)}});
  ASSERT_EQ(read("c1", 1).size(), 1u);
  auto r = wait<std::vector<GroupInfo>>([&](auto cb) { streams_->xinfo_groups("work", cb); });
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].name, "g");
  EXPECT_EQ((*r)[0].consumers, 1);
  EXPECT_EQ((*r)[0].pending, 1);
  EXPECT_EQ((*r)[0].entries_read, 1);
  EXPECT_EQ((*r)[0].lag, 3);  // waiting in the stream: the consumers' demand pressure
}

TEST_F(RedisStreamsTest, GroupBacklogIsTheLagOrTheLengthLessThePending) {
  ASSERT_TRUE(create_group(*streams_).ok());
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(add({{"n", std::to_string(i)}}));
  ASSERT_EQ(read("c1", 2).size(), 2u);
  auto b = wait<GroupBacklog>([&](auto cb) { streams_->group_backlog("work", "g", cb); });
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ(b->backlog, 3);
  EXPECT_EQ(b->pending, 2);
  EXPECT_EQ(b->consumers, 1);
  EXPECT_EQ(b->entries_read, 2);
  EXPECT_EQ(b->length, 5);
  // The last delivered entry acknowledged and deleted (what consumers do): Redis no longer
  // knows the lag, the length less the pending entries still gives the backlog, and the
  // entries-read counter stays exact.
  ASSERT_TRUE(
      wait<int64_t>([&](auto cb) { streams_->ack_and_delete("work", "g", {ids[1]}, cb); }).ok());
  ASSERT_FALSE(wait<std::vector<GroupInfo>>([&](auto cb) { streams_->xinfo_groups("work", cb); })
                   ->front()
                   .lag.has_value());
  b = wait<GroupBacklog>([&](auto cb) { streams_->group_backlog("work", "g", cb); });
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ(b->backlog, 3);
  EXPECT_EQ(b->pending, 1);
  EXPECT_EQ(b->entries_read, 2);
  EXPECT_EQ(b->length, 4);
  ASSERT_EQ(read("c1", 3).size(), 3u);
  b = wait<GroupBacklog>([&](auto cb) { streams_->group_backlog("work", "g", cb); });
  EXPECT_EQ(b->backlog, 0);
  EXPECT_EQ(b->entries_read, 5);
  // Another group's name: an error, not a zero backlog.
  b = wait<GroupBacklog>([&](auto cb) { streams_->group_backlog("work", "other", cb); });
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(b.error().is_server("NOGROUP")) << b.error().to_string();
}

TEST_F(RedisStreamsTest, DeadLetterMovesTheEntryAtomically) {
  ASSERT_TRUE(create_group(*streams_).ok());
  const std::string id = add({{"method", "/a/B"}, {"body", std::string("\0x", 2)}});
  const auto entries = read("c1", 1);
  ASSERT_EQ(entries.size(), 1u);
  auto r = wait<std::string>([&](auto cb) {
    streams_->dead_letter("work", "g", "work:dead", entries[0], "delivered 3 times", 1000, cb);
  });
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(pending().empty());
  EXPECT_EQ(server_.command({"XLEN", "work"}).integer(), 0);
  const RespValue dead = server_.command({"XRANGE", "work:dead", "-", "+"});
  ASSERT_EQ(dead.elements().size(), 1u);
  EXPECT_EQ(dead.elements()[0].elements()[0].str(), *r);
  const RespValue& fields = dead.elements()[0].elements()[1];
  ASSERT_EQ(fields.elements().size(), 8u);
  EXPECT_EQ(fields.elements()[3].str(), std::string("\0x", 2));
  EXPECT_EQ(fields.elements()[4].str(), "dead_from");
  EXPECT_EQ(fields.elements()[5].str(), id);
  EXPECT_EQ(fields.elements()[7].str(), "delivered 3 times");
}

TEST_F(RedisStreamsTest, MaxlenApproxBoundsTheStream) {
  for (int i = 0; i < 1000; ++i) {
    streams_->xadd("work", {{"n", "x"}}, 100, [](RedisResult<std::string>) {});
  }
  auto len = wait<int64_t>([&](auto cb) { streams_->xlen("work", cb); });
  ASSERT_TRUE(len.ok());
  EXPECT_GE(*len, 100);
  EXPECT_LT(*len, 300);  // "~": trimmed in whole macro nodes (100 entries each by default)
}

TEST_F(RedisStreamsTest, PushReplyGivesTheListATtlAndBlpopOnItsOwnConnectionReadsIt) {
  auto blocking = open();
  RedisStreams inbox(blocking);
  std::optional<RedisResult<std::optional<PoppedValue>>> popped;
  inbox.blpop("work:reply:f1", 5s, [&](auto r) { popped.emplace(std::move(r)); });
  run_for(io_, 30ms);
  EXPECT_FALSE(popped.has_value());

  QueueReply reply;
  reply.call_id = "9";
  reply.consumer = "pod-1";
  reply.body = std::string("\0\0\0\0\x00", 5);
  reply.trailers = {{"grpc-status", "0"}};
  auto len = wait<int64_t>(
      [&](auto cb) { streams_->push_reply("work:reply:f1", reply.encode(), 60s, cb); });
  ASSERT_TRUE(len.ok()) << len.error().to_string();
  EXPECT_EQ(*len, 1);
  ASSERT_TRUE(run_until(io_, [&] { return popped.has_value(); }));
  ASSERT_TRUE(popped->ok()) << popped->error().to_string();
  ASSERT_TRUE((*popped)->has_value());
  EXPECT_EQ((**popped)->key, "work:reply:f1");
  const auto back = QueueReply::decode((**popped)->value);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, reply);

  // The TTL is set in the same transaction as the push.
  ASSERT_TRUE(
      wait<int64_t>([&](auto cb) { streams_->push_reply("work:reply:f1", "a", 60s, cb); }).ok());
  const int64_t ttl = server_.command({"PTTL", "work:reply:f1"}).integer();
  EXPECT_GT(ttl, 55000);
  EXPECT_LE(ttl, 60000);
}

TEST_F(RedisStreamsTest, LpopDrainsRepliesOldestFirst) {
  for (const char* v : {"r1", "r2", "r3"}) {
    ASSERT_TRUE(wait<int64_t>([&](auto cb) { streams_->push_reply("inbox", v, 60s, cb); }).ok());
  }
  // Pushed on the right, popped from the left: the oldest reply first.
  auto r = wait<std::vector<std::string>>([&](auto cb) { streams_->lpop("inbox", 10, cb); });
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(*r, (std::vector<std::string>{"r1", "r2", "r3"}));
  auto none = wait<std::vector<std::string>>([&](auto cb) { streams_->lpop("inbox", 10, cb); });
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(RedisStreamsTest, BlpopTimesOutWithNothing) {
  auto blocking = open();
  RedisStreams inbox(blocking);
  auto r = wait<std::optional<PoppedValue>>([&](auto cb) { inbox.blpop("empty", 50ms, cb); });
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->has_value());
  auto bad = wait<std::optional<PoppedValue>>([&](auto cb) { inbox.blpop("empty", 0ms, cb); });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, RedisErrorKind::BadArgument);
}

TEST_F(RedisStreamsTest, InfoGivesRedisMemoryAndCpuAsNumbers) {
  auto r = wait<RedisInfo>([&](auto cb) { streams_->info({"memory", "cpu", "server"}, cb); });
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_GT(r->number("used_memory").value_or(0), 0);
  EXPECT_GT(r->number("used_memory_rss").value_or(0), 0);
  EXPECT_TRUE(r->number("maxmemory").has_value());
  EXPECT_TRUE(r->number("used_cpu_sys").has_value());
  EXPECT_TRUE(r->number("used_cpu_user").has_value());
  EXPECT_EQ(r->get("run_id").value_or("").size(), 40u);
}

TEST_F(RedisStreamsTest, AfterARestartWithoutPersistenceTheGroupIsCreatedAgain) {
  ASSERT_TRUE(create_group(*streams_).ok());
  auto run_id = [&] {
    auto r = wait<RedisInfo>([&](auto cb) { streams_->info({"server"}, cb); });
    return r.ok() ? std::string(r->get("run_id").value_or("")) : std::string();
  };
  const std::string before = run_id();
  server_.stop();
  ASSERT_TRUE(run_until(io_, [&] { return !conn_->connected(); }));  // it notices the EOF
  server_.start();
  ASSERT_TRUE(run_until(io_, [&] { return conn_->connected(); }));
  EXPECT_NE(run_id(), before);  // how a frontend tells a restart from a reconnect
  RedisStreams::ReadGroupArgs args{"work", "g", "c1", 10, Duration::zero(), ">"};
  auto lost = wait<std::vector<StreamEntry>>([&](auto cb) { streams_->xreadgroup(args, cb); });
  ASSERT_FALSE(lost.ok());
  EXPECT_TRUE(lost.error().is_server("NOGROUP")) << lost.error().to_string();
  // A frontend XADDed before the group came back: start id "0" keeps that entry.
  add({{"n", "early"}});
  auto created = create_group(*streams_);
  ASSERT_TRUE(created.ok()) << created.error().to_string();
  EXPECT_TRUE(*created);
  const auto entries = read("c1", 10);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].fields, (StreamFields{{"n", "early"}}));
}

TEST_F(RedisStreamsTest, CommandBuildersSpellTheCommandsAsRedisExpects) {
  RedisStreams::ReadGroupArgs args{"s", "g", "c", 3, 1500us, ">"};
  EXPECT_EQ(RedisStreams::xreadgroup_command(args).encoded(),
            RedisCommand("XREADGROUP")
                .arg("GROUP")
                .arg("g")
                .arg("c")
                .arg("COUNT")
                .arg("3")
                .arg("BLOCK")
                .arg("2")
                .arg("STREAMS")
                .arg("s")
                .arg(">")
                .encoded());  // 1.5 ms rounds up: BLOCK 0 would mean forever
  EXPECT_EQ(RedisStreams::xadd_command("s", {{"f", "v"}}, 1000).encoded(), RedisCommand("XADD")
                                                                               .arg("s")
                                                                               .arg("MAXLEN")
                                                                               .arg("~")
                                                                               .arg("1000")
                                                                               .arg("*")
                                                                               .arg("f")
                                                                               .arg("v")
                                                                               .encoded());
  EXPECT_EQ(RedisStreams::blpop_command("k", 2500ms).encoded(),
            RedisCommand("BLPOP").arg("k").arg("2.500").encoded());
  EXPECT_EQ(RedisStreams::xautoclaim_command("s", "g", "c", 30s, "0-0", 5, true).encoded(),
            RedisCommand("XAUTOCLAIM")
                .arg("s")
                .arg("g")
                .arg("c")
                .arg("30000")
                .arg("0-0")
                .arg("COUNT")
                .arg("5")
                .arg("JUSTID")
                .encoded());
  EXPECT_EQ(redis_ms(1ns), 1);
  EXPECT_EQ(redis_ms(Duration::zero()), 0);
}

}  // namespace
}  // namespace sluice::queue
