// PacedBody: credit goes back only for bytes handed on, once, also when a rewind sends them
// again; the replay copy is kept within its limit.
#include "src/proxy/paced_body.h"

#include <gtest/gtest.h>

#include <string>

#include "src/h2/output_queue.h"

namespace sluice {
namespace {

struct CreditLog final : PacedBody::Sender {
  void return_credit(std::size_t n) override { returned += n; }
  std::size_t returned = 0;
};

void put(PacedBody& body, const std::string& s) {
  body.received(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// Hands up to `n` bytes to the "other side" and returns them.
std::string send(PacedBody& body, std::size_t n) {
  h2::OutputQueue q;
  const std::size_t moved = body.buffer().take(n, q);
  std::string out;
  q.for_each_front(1 << 20, [&](const uint8_t* p, std::size_t k) {
    out.append(reinterpret_cast<const char*>(p), k);
  });
  body.delivered(moved);
  return out;
}

TEST(PacedBodyTest, RewindSendsEveryByteAgainAndReturnsItsCreditOnce) {
  CreditLog log;
  PacedBody body(log);
  put(body, "head-");
  body.keep_for_replay(64 * 1024);
  const std::string big(3000, 'x');  // past the inline bytes: chunks are copied too
  put(body, big);
  EXPECT_EQ(send(body, 1000), "head-" + big.substr(0, 995));
  EXPECT_EQ(log.returned, 1000u);
  put(body, "-tail");
  body.buffer().finish();
  ASSERT_TRUE(body.replayable());
  body.rewind();
  EXPECT_TRUE(body.buffer().finished());
  EXPECT_EQ(send(body, 1 << 20), "head-" + big + "-tail");
  // 1000 bytes went twice: their credit went back once; the rest once too.
  EXPECT_EQ(log.returned, 5u + big.size() + 5u);
  EXPECT_EQ(body.delivered_bytes(), 1000u + 5u + big.size() + 5u);
}

TEST(PacedBodyTest, BodyBeyondTheLimitIsNotReplayable) {
  CreditLog log;
  PacedBody body(log);
  body.keep_for_replay(10);
  put(body, "0123456789");
  EXPECT_TRUE(body.replayable());
  put(body, "a");
  EXPECT_FALSE(body.replayable());
  EXPECT_EQ(send(body, 100), "0123456789a");  // the body itself is untouched
}

TEST(PacedBodyTest, NothingIsKeptBeforeKeepForReplayOrAfterDropReplay) {
  CreditLog log;
  PacedBody body(log);
  EXPECT_FALSE(body.replayable());
  body.keep_for_replay(100);
  body.drop_replay();
  put(body, "abc");
  EXPECT_FALSE(body.replayable());
}

}  // namespace
}  // namespace sluice
