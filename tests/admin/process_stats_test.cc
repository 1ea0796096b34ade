#include "src/admin/process_stats.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

using namespace std::chrono_literals;

TEST(ProcessStatsTest, RssIsResidentPagesTimesPageSize) {
  EXPECT_EQ(rss_bytes_from_statm("5000 1234 300 10 0 900 0\n", 4096), 1234.0 * 4096);
  EXPECT_EQ(rss_bytes_from_statm("", 4096), 0.0);
  EXPECT_EQ(rss_bytes_from_statm("5000 x", 4096), 0.0);
}

TEST(ProcessStatsTest, ThreadCountIsFieldTwentyEvenWhenCommHasSpaces) {
  const std::string stat =
      "4242 (my (odd) proc) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 17 0 123 456 78";
  EXPECT_EQ(threads_from_stat(stat), 17.0);
  EXPECT_EQ(threads_from_stat("garbage"), 0.0);
  EXPECT_EQ(threads_from_stat("1 (x) S 1 2"), 0.0);
}

TEST(ProcessStatsTest, RegistersServerGaugesReadFromThisProcess) {
  StatsRegistry registry;
  register_process_stats(registry, SteadyClock::now() - 10s);
  double rss = 0;
  double uptime = 0;
  double threads = 0;
  for (const StatValue& v : registry.snapshot()) {
    EXPECT_EQ(v.type, StatType::GaugeFn);
    if (v.name.dotted() == "server.memory_rss_bytes") rss = v.number;
    if (v.name.dotted() == "server.uptime_seconds") uptime = v.number;
    if (v.name.dotted() == "server.threads") threads = v.number;
  }
  EXPECT_GT(rss, 0.0);
  EXPECT_GE(uptime, 10.0);
  EXPECT_GE(threads, 1.0);
}

}  // namespace
}  // namespace sluice
