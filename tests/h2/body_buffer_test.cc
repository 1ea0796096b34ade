#include "src/h2/body_buffer.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::h2 {
namespace {

std::string drain(OutputQueue& q) {
  std::string out;
  q.for_each_front(1000, [&](const uint8_t* p, std::size_t n) {
    out.append(reinterpret_cast<const char*>(p), n);
  });
  q.consume(q.size());
  return out;
}

void append(BodyBuffer& b, const std::string& s) {
  b.append(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

TEST(BodyBufferTest, TakeMovesBytesInOrder) {
  BodyBuffer b;
  append(b, "hello ");
  append(b, "world");
  EXPECT_EQ(b.size(), 11u);
  OutputQueue q;
  EXPECT_EQ(b.take(8, q), 8u);
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(b.take(100, q), 3u);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(drain(q), "hello world");
}

TEST(BodyBufferTest, AppendAfterPartialTakeDoesNotDisturbQueuedBytes) {
  BodyBuffer b;
  const std::string first(600, 'a');  // past the inline bytes: a chunk the queue references
  append(b, first);
  OutputQueue q;
  b.take(first.size(), q);
  const std::string second(600, 'b');
  append(b, second);  // lands in the same chunk, after the referenced bytes
  b.take(second.size(), q);
  EXPECT_EQ(drain(q), first + second);
}

TEST(BodyBufferTest, LargePayloadsSpanChunks) {
  BodyBuffer b;
  std::string big(100000, 'x');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  for (std::size_t off = 0; off < big.size(); off += 16384) {
    append(b, big.substr(off, 16384));
  }
  OutputQueue q;
  std::string got;
  while (!b.empty()) {
    b.take(16384, q);
    got += drain(q);
  }
  EXPECT_EQ(got, big);
}

TEST(BodyBufferTest, SmallBodyThenChunksKeepsOrder) {
  // A small message sits inline; what follows once it overflows goes to chunks behind it.
  BodyBuffer b;
  append(b, std::string(100, 'a'));
  append(b, std::string(5000, 'b'));
  append(b, "c");
  OutputQueue q;
  EXPECT_EQ(b.take(60, q), 60u);
  std::string got = drain(q);
  while (!b.empty()) {
    b.take(1000, q);
    got += drain(q);
  }
  EXPECT_EQ(got, std::string(100, 'a') + std::string(5000, 'b') + "c");
}

TEST(BodyBufferTest, InlineSpaceIsReusedOnceTaken) {
  BodyBuffer b;
  OutputQueue q;
  std::string want;
  for (int i = 0; i < 50; ++i) {
    const std::string msg(90, static_cast<char>('a' + i % 26));
    append(b, msg);
    EXPECT_EQ(b.take(1000, q), msg.size());
    want += msg;
  }
  EXPECT_EQ(drain(q), want);
}

TEST(BodyBufferTest, TrailersFinishTheBody) {
  BodyBuffer b;
  EXPECT_FALSE(b.finished());
  HeaderBlock t;
  t.add("grpc-status", "0");
  b.set_trailers(std::move(t));
  EXPECT_TRUE(b.finished());
  ASSERT_TRUE(b.trailers().has_value());
  EXPECT_EQ(b.trailers()->find("grpc-status").value(), "0");
}

TEST(BodyBufferTest, DiscardDropsEverything) {
  BodyBuffer b;
  append(b, "12345");
  append(b, std::string(3000, 'z'));
  EXPECT_EQ(b.discard(), 3005u);
  EXPECT_TRUE(b.empty());
  append(b, "after");
  OutputQueue q;
  b.take(100, q);
  EXPECT_EQ(drain(q), "after");
}

}  // namespace
}  // namespace sluice::h2
