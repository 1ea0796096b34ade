#include "integration/common/base64.h"

#include <gtest/gtest.h>

namespace sluice::itest {
namespace {

TEST(ItestBase64Test, EncodesRfc4648Vectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
}

TEST(ItestBase64Test, DecodesPaddedAndUnpadded) {
  EXPECT_EQ(base64_decode("Zm9vYg=="), "foob");
  EXPECT_EQ(base64_decode("Zm9vYg"), "foob");
  EXPECT_EQ(base64_decode("Zm9vYmFy"), "foobar");
}

TEST(ItestBase64Test, RoundTripsEveryByteValue) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  EXPECT_EQ(base64_decode(base64_encode(all)), all);
}

TEST(ItestBase64Test, RejectsCharactersOutsideTheAlphabet) {
  EXPECT_EQ(base64_decode("Zm9v!"), std::nullopt);
  EXPECT_EQ(base64_decode("Zm 9v"), std::nullopt);
  EXPECT_EQ(base64_decode("Zm9v-_"), std::nullopt);  // base64url is not accepted
}

TEST(ItestBase64Test, RejectsATruncatedQuantum) { EXPECT_EQ(base64_decode("Zm9vY"), std::nullopt); }

}  // namespace
}  // namespace sluice::itest
