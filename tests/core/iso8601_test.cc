#include "src/core/iso8601.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(Iso8601Test, FormatsUtcWithMilliseconds) {
  const std::chrono::system_clock::time_point t{std::chrono::milliseconds(1714566896789)};
  EXPECT_EQ(iso8601(t), "2024-05-01T12:34:56.789Z");
  EXPECT_EQ(iso8601(std::chrono::system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
}

}  // namespace
}  // namespace sluice
