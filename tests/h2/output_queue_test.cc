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

int segment_count(const OutputQueue& q) {
  int segments = 0;
  q.for_each_front(1000, [&](const uint8_t*, std::size_t) { ++segments; });
  return segments;
}

TEST(OutputQueueTest, CopiedBytesCoalesceIntoOneSegment) {
  OutputQueue q;
  q.append(bytes("abc"), 3);
  q.append(bytes("def"), 3);
  EXPECT_EQ(segment_count(q), 1);
  EXPECT_EQ(contents(q), "abcdef");
}

TEST(OutputQueueTest, LargeSharedBytesAreReferencedNotCopied) {
  OutputQueue q;
  const std::size_t n = OutputQueue::kCopyAtMost + 1;
  auto mem = std::make_shared<uint8_t[]>(n);
  std::memset(mem.get(), 'w', n);
  q.append(bytes("hd"), 2);
  q.append_shared(mem, mem.get(), n);
  const uint8_t* seen = nullptr;
  q.for_each_front(10, [&](const uint8_t* p, std::size_t len) {
    if (len == n) seen = p;
  });
  EXPECT_EQ(seen, mem.get());
  EXPECT_EQ(contents(q), "hd" + std::string(n, 'w'));
  EXPECT_EQ(mem.use_count(), 2);
  q.consume(2 + n);
  EXPECT_EQ(mem.use_count(), 1);
  EXPECT_TRUE(q.empty());
}

TEST(OutputQueueTest, SmallSharedBytesAreCopiedSoFramesStayOneSegment) {
  // Many small messages (frame header + 5-byte payload each) must stay one gathered segment:
  // a write sends at most 64 segments, so one segment per payload would split a batch.
  OutputQueue q;
  auto mem = std::make_shared<uint8_t[]>(5);
  std::memcpy(mem.get(), "ABCDE", 5);
  std::string expected;
  for (int i = 0; i < 100; ++i) {
    q.append(bytes("hdr"), 3);
    q.append_shared(mem, mem.get(), 5);
    expected += "hdrABCDE";
  }
  EXPECT_EQ(segment_count(q), 1);
  EXPECT_EQ(contents(q), expected);
  EXPECT_EQ(mem.use_count(), 1);  // nothing references the caller's memory
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
