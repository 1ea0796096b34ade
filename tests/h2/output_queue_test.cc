#include "src/h2/output_queue.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace sluice::h2 {
namespace {

std::string contents(const OutputQueue& q) {
  std::string out;
  q.for_each_front(1000, [&](const uint8_t* p, std::size_t n) {
    out.append(reinterpret_cast<const char*>(p), n);
  });
  return out;
}

const uint8_t* bytes(const char* s) { return reinterpret_cast<const uint8_t*>(s); }

TEST(OutputQueueTest, CopiedBytesCoalesceIntoOneSegment) {
  OutputQueue q;
  q.append(bytes("abc"), 3);
  q.append(bytes("def"), 3);
  int segments = 0;
  q.for_each_front(10, [&](const uint8_t*, std::size_t) { ++segments; });
  EXPECT_EQ(segments, 1);
  EXPECT_EQ(contents(q), "abcdef");
}

TEST(OutputQueueTest, SharedBytesAreReferencedNotCopied) {
  OutputQueue q;
  auto mem = std::make_shared<uint8_t[]>(4);
  std::memcpy(mem.get(), "wxyz", 4);
  q.append(bytes("hd"), 2);
  q.append_shared(mem, mem.get(), 4);
  const uint8_t* seen = nullptr;
  q.for_each_front(10, [&](const uint8_t* p, std::size_t n) {
    if (n == 4) seen = p;
  });
  EXPECT_EQ(seen, mem.get());
  EXPECT_EQ(contents(q), "hdwxyz");
  EXPECT_EQ(mem.use_count(), 2);
  q.consume(6);
  EXPECT_EQ(mem.use_count(), 1);
  EXPECT_TRUE(q.empty());
}

TEST(OutputQueueTest, PartialConsumeKeepsTheRest) {
  OutputQueue q;
  q.append(bytes("0123456789"), 10);
  q.consume(4);
  EXPECT_EQ(q.size(), 6u);
  EXPECT_EQ(contents(q), "456789");
  q.append(bytes("ab"), 2);
  EXPECT_EQ(contents(q), "456789ab");
}

TEST(OutputQueueTest, LargeCopiesSpanBlocks) {
  OutputQueue q;
  std::string big(40000, 'q');
  q.append(bytes(big.c_str()), big.size());
  EXPECT_EQ(q.size(), big.size());
  EXPECT_EQ(contents(q), big);
}

}  // namespace
}  // namespace sluice::h2
