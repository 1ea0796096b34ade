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

TEST(BodyBufferTest, TakeMovesBytesInOrderByReference) {
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
  append(b, "abc");
  OutputQueue q;
  b.take(3, q);
  append(b, "def");  // lands in the same chunk, after the referenced bytes
  b.take(3, q);
  EXPECT_EQ(drain(q), "abcdef");
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
  EXPECT_EQ(b.discard(), 5u);
  EXPECT_TRUE(b.empty());
}

}  // namespace
}  // namespace sluice::h2
