#include "src/config/units.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(ParseDuration, AcceptsEveryUnit) {
  EXPECT_EQ(parse_duration("100ns"), nanoseconds(100));
  EXPECT_EQ(parse_duration("250us"), microseconds(250));
  EXPECT_EQ(parse_duration("250\u00b5s"), microseconds(250));
  EXPECT_EQ(parse_duration("8ms"), milliseconds(8));
  EXPECT_EQ(parse_duration("1s"), seconds(1));
  EXPECT_EQ(parse_duration("2m"), minutes(2));
  EXPECT_EQ(parse_duration("1h"), hours(1));
  EXPECT_EQ(parse_duration("0s"), nanoseconds(0));
}

TEST(ParseDuration, AcceptsExactFractions) {
  EXPECT_EQ(parse_duration("1.5s"), milliseconds(1500));
  EXPECT_EQ(parse_duration("0.25ms"), microseconds(250));
  EXPECT_EQ(parse_duration("1.5m"), seconds(90));
  EXPECT_EQ(parse_duration("0.001us"), nanoseconds(1));
  EXPECT_EQ(parse_duration("2.50000s"), milliseconds(2500));
}

TEST(ParseDuration, RejectsBareNumbersBecauseUnitsAreRequired) {
  EXPECT_EQ(parse_duration("5"), std::nullopt);
  EXPECT_EQ(parse_duration("0"), std::nullopt);
  EXPECT_EQ(parse_duration("1.5"), std::nullopt);
}

TEST(ParseDuration, RejectsMalformedInput) {
  for (const char* bad : {"", "s", "ms", "-1s", "+1s", "1 s", " 1s", "1s ", "1.s", ".5s", "1..5s",
                          "1sec", "1S", "1MS", "1d", "1e3ms", "1,5s", "0x10s", "1s1ms"}) {
    EXPECT_EQ(parse_duration(bad), std::nullopt) << bad;
  }
}

TEST(ParseDuration, RejectsFractionsOfANanosecond) {
  EXPECT_EQ(parse_duration("1.5ns"), std::nullopt);
  EXPECT_EQ(parse_duration("0.0001us"), std::nullopt);
}

TEST(ParseDuration, RejectsOverflow) {
  EXPECT_EQ(parse_duration("9223372036854775807ns"), nanoseconds(9223372036854775807));
  EXPECT_EQ(parse_duration("9223372036854775808ns"), std::nullopt);
  EXPECT_EQ(parse_duration("100000000000h"), std::nullopt);
  EXPECT_EQ(parse_duration("99999999999999999999999s"), std::nullopt);
}

TEST(ParseSize, AcceptsPlainBytesAndEveryUnit) {
  EXPECT_EQ(parse_size("65535"), 65535u);
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("64KiB"), 65536u);
  EXPECT_EQ(parse_size("1MiB"), 1048576u);
  EXPECT_EQ(parse_size("1GiB"), 1073741824u);
  EXPECT_EQ(parse_size("1TiB"), 1099511627776u);
  EXPECT_EQ(parse_size("64KB"), 64000u);
  EXPECT_EQ(parse_size("1MB"), 1000000u);
  EXPECT_EQ(parse_size("2GB"), 2000000000u);
  EXPECT_EQ(parse_size("1TB"), 1000000000000u);
}

TEST(ParseSize, AcceptsFractionsThatGiveWholeBytes) {
  EXPECT_EQ(parse_size("1.5KiB"), 1536u);
  EXPECT_EQ(parse_size("0.25KiB"), 256u);
  EXPECT_EQ(parse_size("1.5MB"), 1500000u);
  EXPECT_EQ(parse_size("1.0"), 1u);
}

TEST(ParseSize, RejectsFractionalBytes) {
  EXPECT_EQ(parse_size("1.5"), std::nullopt);
  EXPECT_EQ(parse_size("0.1KiB"), std::nullopt);
}

TEST(ParseSize, RejectsMalformedInputAndOverflow) {
  for (const char* bad : {"", "KiB", "-1", "1 KiB", "1kib", "1kb", "1K", "1k", "1B", "1Ki", "1PiB",
                          "0x10", "1e3", "18446744073709551616", "16777216TiB"}) {
    EXPECT_EQ(parse_size(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(parse_size("18446744073709551615"), 18446744073709551615u);
}

TEST(FormatDuration, UsesTheLargestExactUnit) {
  EXPECT_EQ(format_duration(milliseconds(8)), "8ms");
  EXPECT_EQ(format_duration(seconds(1)), "1s");
  EXPECT_EQ(format_duration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(format_duration(seconds(90)), "90s");
  EXPECT_EQ(format_duration(minutes(2)), "2m");
  EXPECT_EQ(format_duration(hours(3)), "3h");
  EXPECT_EQ(format_duration(seconds(300)), "5m");
  EXPECT_EQ(format_duration(microseconds(250)), "250us");
  EXPECT_EQ(format_duration(nanoseconds(1001)), "1001ns");
  EXPECT_EQ(format_duration(nanoseconds(0)), "0s");
}

TEST(FormatDuration, RoundTripsThroughParse) {
  for (int64_t ns :
       {int64_t{1}, int64_t{999}, int64_t{1000}, int64_t{1'500'000}, int64_t{60'000'000'000},
        int64_t{3'600'000'000'001}, int64_t{9223372036854775807}}) {
    EXPECT_EQ(parse_duration(format_duration(nanoseconds(ns))), nanoseconds(ns)) << ns;
  }
}

TEST(FormatSize, PrefersBinaryUnitsThenDecimalThenBytes) {
  EXPECT_EQ(format_size(65536), "64KiB");
  EXPECT_EQ(format_size(1048576), "1MiB");
  EXPECT_EQ(format_size(1073741824), "1GiB");
  EXPECT_EQ(format_size(1536), "1536");
  EXPECT_EQ(format_size(3 * 1024 * 1024 / 2), "1536KiB");
  EXPECT_EQ(format_size(64000), "64KB");
  EXPECT_EQ(format_size(2000000), "2MB");
  EXPECT_EQ(format_size(65535), "65535");
  EXPECT_EQ(format_size(0), "0");
}

TEST(FormatSize, RoundTripsThroughParse) {
  for (uint64_t n : {uint64_t{1}, uint64_t{1000}, uint64_t{1024}, uint64_t{65535},
                     uint64_t{2147483647}, uint64_t{1} << 40, uint64_t{18446744073709551615u}}) {
    EXPECT_EQ(parse_size(format_size(n)), n) << n;
  }
}

}  // namespace
}  // namespace sluice
