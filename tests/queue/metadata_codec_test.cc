#include "src/queue/metadata_codec.h"

#include <gtest/gtest.h>

namespace sluice::queue {
namespace {

TEST(MetadataCodecTest, EncodesPairsAsReadableNetstrings) {
  const Metadata m = {{"content-type", "application/grpc"}, {"x", ""}};
  EXPECT_EQ(encode_metadata(m), "12:content-type,16:application/grpc,1:x,0:,");
}

TEST(MetadataCodecTest, RoundTripsBinaryValuesAndRepeatedNamesInOrder) {
  const Metadata m = {
      {"trace-bin", std::string("\0\x01\r\n,:\xff", 7)}, {"a", "1"}, {"a", "2"}, {"", ""}};
  const auto back = decode_metadata(encode_metadata(m));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, m);
  EXPECT_EQ(decode_metadata("")->size(), 0u);
}

TEST(MetadataCodecTest, RejectsAnythingButAnEvenListOfNetstrings) {
  for (const char* bad : {"1:a,", "x", "1:a", "1:ab,", "2:a,", ":a,", "01:a,1:b,", "-1:,",
                          "1:a;1:b,", "99999999999:a,", "1:a,1:b,1:c,"}) {
    EXPECT_FALSE(decode_metadata(bad).has_value()) << bad;
  }
}

TEST(MetadataCodecTest, ReadNetstringLeavesTheInputAloneOnFailure) {
  std::string_view in = "3:abc,2:x";
  const auto first = read_netstring(in);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, "abc");
  EXPECT_EQ(in, "2:x");
  EXPECT_FALSE(read_netstring(in).has_value());
  EXPECT_EQ(in, "2:x");
}

}  // namespace
}  // namespace sluice::queue
