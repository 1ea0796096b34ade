// ReplyInbox against a real redis-server: replies pushed by a consumer (push_reply on another
// connection) reach the call waiting for them, and nothing else.
#include "src/queue/reply_inbox.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "tests/queue/io_wait.h"
#include "tests/queue/redis_server.h"

namespace sluice::queue {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

class ReplyInboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    consumer_conn_ = open();
    consumer_.emplace(consumer_conn_);
  }
  void TearDown() override {
    if (inbox_) inbox_->stop();
    run_for(io_, 10ms);
  }

  std::shared_ptr<RedisConnection> open(bool start = true) {
    RedisConnection::Options o;
    o.port = server_.port();
    o.reconnect_min = 20ms;
    o.reconnect_max = 200ms;
    auto c = RedisConnection::create(io_, o);
    if (start) {
      c->start();
      EXPECT_TRUE(run_until(io_, [&] { return c->connected(); }));
    }
    return c;
  }

  void make_inbox(ReplyInbox::Options o = {}) {
    if (o.key.empty()) o.key = "work:reply:f1:0";
    o.block = 200ms;
    inbox_ = ReplyInbox::create(open(false), o);
  }
  void start_inbox(ReplyInbox::Options o = {}) {
    make_inbox(std::move(o));
    inbox_->start();
    run_for(io_, 20ms);  // connected, first BLPOP issued
  }

  // What a consumer does: push a reply for `call_id` to the inbox's list.
  void push(const std::string& call_id, int status = 0, std::string body = "ok") {
    QueueReply r;
    r.call_id = call_id;
    r.consumer = "pod-1";
    r.grpc_status = status;
    r.body = std::move(body);
    push_raw(r.encode());
  }
  void push_raw(const std::string& bytes) {
    bool done = false;
    consumer_->push_reply(inbox_ ? inbox_->key() : "work:reply:f1:0", bytes, 60s,
                          [&](RedisResult<int64_t> r) {
                            EXPECT_TRUE(r.ok()) << r.error().to_string();
                            done = true;
                          });
    ASSERT_TRUE(run_until(io_, [&] { return done; }));
  }

  // Registers `call_id`; its outcome lands in results_.
  void expect(const std::string& call_id) {
    ASSERT_TRUE(inbox_->expect(call_id, [this, call_id](RedisResult<QueueReply> r) {
      EXPECT_EQ(results_.count(call_id), 0u) << "handler ran twice for " << call_id;
      results_.emplace(call_id, std::move(r));
      order_.push_back(call_id);
    }));
  }

  RedisServer server_;
  asio::io_context io_{1};
  std::shared_ptr<RedisConnection> consumer_conn_;
  std::optional<RedisStreams> consumer_;
  std::shared_ptr<ReplyInbox> inbox_;
  std::map<std::string, RedisResult<QueueReply>> results_;
  std::vector<std::string> order_;
};

TEST_F(ReplyInboxTest, DeliversEachReplyToTheCallWaitingForIt) {
  start_inbox();
  expect("1");
  expect("2");
  push("2", 0, "two");
  push("1", 5, "one");
  ASSERT_TRUE(run_until(io_, [&] { return results_.size() == 2; }));
  ASSERT_TRUE(results_.at("1").ok());
  EXPECT_EQ(results_.at("1")->grpc_status, 5);
  EXPECT_EQ(results_.at("1")->body, "one");
  EXPECT_EQ(results_.at("2")->body, "two");
  EXPECT_EQ(inbox_->waiting(), 0u);
  EXPECT_EQ(inbox_->stats().delivered.load(), 2u);
  EXPECT_EQ(inbox_->stats().waiting.load(), 0);
}

TEST_F(ReplyInboxTest, AReplyNobodyWaitsForIsDroppedAndCounted) {
  start_inbox();
  expect("1");
  ASSERT_TRUE(inbox_->forget("1"));  // e.g. its deadline passed
  EXPECT_FALSE(inbox_->forget("1"));
  push("1");
  push("1");  // a duplicate after a consumer crash: at-least-once to the service
  push("unknown");
  ASSERT_TRUE(run_until(io_, [&] { return inbox_->stats().unmatched.load() == 3; }));
  EXPECT_TRUE(results_.empty());
}

TEST_F(ReplyInboxTest, OnlyTheFirstOfTwoRepliesForACallIsDelivered) {
  start_inbox();
  expect("7");
  push("7", 0, "first");
  push("7", 0, "second");
  ASSERT_TRUE(run_until(io_, [&] { return inbox_->stats().unmatched.load() == 1; }));
  ASSERT_EQ(results_.size(), 1u);
  EXPECT_EQ(results_.at("7")->body, "first");
}

TEST_F(ReplyInboxTest, ACallIdCanWaitOnlyOnce) {
  start_inbox();
  expect("1");
  EXPECT_FALSE(inbox_->expect("1", [](RedisResult<QueueReply>) {}));
  EXPECT_EQ(inbox_->waiting(), 1u);
}

TEST_F(ReplyInboxTest, DrainsABacklogOldestFirst) {
  // 300 replies wait in the list before the inbox starts: one BLPOP, then LPOP batches.
  for (int i = 0; i < 300; ++i) push(std::to_string(i));
  ReplyInbox::Options o;
  o.drain_batch = 64;
  make_inbox(o);
  for (int i = 0; i < 300; ++i) expect(std::to_string(i));
  inbox_->start();
  ASSERT_TRUE(run_until(io_, [&] { return results_.size() == 300; }));
  for (int i = 0; i < 300; ++i) ASSERT_EQ(order_[i], std::to_string(i));
  EXPECT_EQ(server_.command({"EXISTS", inbox_->key()}).integer(), 0);
}

TEST_F(ReplyInboxTest, UndecodableElementsAreSkipped) {
  start_inbox();
  expect("1");
  push_raw("not a reply");
  push("1");
  ASSERT_TRUE(run_until(io_, [&] { return results_.size() == 1; }));
  EXPECT_EQ(inbox_->stats().undecodable.load(), 1u);
}

TEST_F(ReplyInboxTest, KeepsReadingWhileIdleAcrossBlpopTimeouts) {
  start_inbox();  // BLPOP rounds of 200 ms
  expect("late");
  run_for(io_, 700ms);
  push("late");
  ASSERT_TRUE(run_until(io_, [&] { return results_.size() == 1; }));
  EXPECT_TRUE(results_.at("late").ok());
}

TEST_F(ReplyInboxTest, ARedisRestartFailsWaitingCallsAtOnceAndReadingGoesOn) {
  start_inbox();
  expect("lost");
  server_.stop();
  ASSERT_TRUE(run_until(io_, [&] { return !consumer_conn_->connected(); }));
  server_.start();
  // The reconnected inbox sees a new run_id: the entry of "lost" is gone with the old Redis.
  ASSERT_TRUE(run_until(io_, [&] { return results_.size() == 1; }));
  ASSERT_FALSE(results_.at("lost").ok());
  EXPECT_EQ(results_.at("lost").error().kind, RedisErrorKind::ConnectionLost);
  EXPECT_EQ(inbox_->stats().restarts.load(), 1u);
  // And it reads from the restarted Redis.
  ASSERT_TRUE(run_until(io_, [&] { return consumer_conn_->connected(); }));
  expect("new");
  push("new");
  ASSERT_TRUE(run_until(io_, [&] { return results_.size() == 2; }));
  EXPECT_TRUE(results_.at("new").ok());
}

TEST_F(ReplyInboxTest, WithPersistenceWaitingCallsSurviveARestart) {
  ReplyInbox::Options o;
  o.fail_waiting_on_restart = false;
  start_inbox(o);
  expect("kept");
  server_.stop();
  ASSERT_TRUE(run_until(io_, [&] { return !consumer_conn_->connected(); }));
  server_.start();
  ASSERT_TRUE(run_until(io_, [&] { return consumer_conn_->connected(); }));
  ASSERT_TRUE(run_until(io_, [&] { return inbox_->stats().restarts.load() == 1; }));
  EXPECT_TRUE(results_.empty());
  push("kept");
  ASSERT_TRUE(run_until(io_, [&] { return results_.size() == 1; }));
  EXPECT_TRUE(results_.at("kept").ok());
}

TEST_F(ReplyInboxTest, StopFailsWaitingCallsWithoutRunningThemInsideStop) {
  start_inbox();
  expect("1");
  inbox_->stop();
  EXPECT_TRUE(results_.empty());
  ASSERT_TRUE(run_until(io_, [&] { return results_.size() == 1; }));
  EXPECT_FALSE(results_.at("1").ok());
  inbox_.reset();
}

}  // namespace
}  // namespace sluice::queue
