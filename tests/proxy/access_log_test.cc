#include "src/proxy/access_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace sluice {
namespace {

AccessLogEntry entry(int i) {
  AccessLogEntry e;
  e.timestamp = std::chrono::system_clock::time_point{std::chrono::milliseconds(1714566896789)};
  e.method = "POST";
  e.path = "/pkg.Svc/Method" + std::to_string(i);
  e.grpc_status = 8;
  e.outcome = "shed";
  e.queue_wait_us = 1500;
  e.upstream_us = -1;
  e.total_us = 1600;
  e.bytes_in = 12;
  e.bytes_out = 0;
  return e;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class AccessLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("sluice_access_log_test_" + std::to_string(::getpid()) + ".log"))
                .string();
    std::filesystem::remove(path_);
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_;
};

TEST_F(AccessLogTest, FormatsOneJsonObjectWithEveryField) {
  const auto v = boost::json::parse(AccessLog::format(entry(1)));
  EXPECT_EQ(v.at("timestamp").as_string(), "2024-05-01T12:34:56.789Z");
  EXPECT_EQ(v.at("method").as_string(), "POST");
  EXPECT_EQ(v.at("path").as_string(), "/pkg.Svc/Method1");
  EXPECT_EQ(v.at("grpc_status").as_int64(), 8);
  EXPECT_EQ(v.at("outcome").as_string(), "shed");
  EXPECT_EQ(v.at("queue_wait_us").as_int64(), 1500);
  EXPECT_TRUE(v.at("upstream_us").is_null());
  EXPECT_EQ(v.at("total_us").as_int64(), 1600);
  EXPECT_EQ(v.at("bytes_in").to_number<uint64_t>(), 12u);
  EXPECT_EQ(v.at("bytes_out").to_number<uint64_t>(), 0u);
}

TEST_F(AccessLogTest, MissingGrpcStatusIsNull) {
  AccessLogEntry e = entry(1);
  e.grpc_status = -1;
  EXPECT_TRUE(boost::json::parse(AccessLog::format(e)).at("grpc_status").is_null());
}

TEST_F(AccessLogTest, DisabledLogOpensNothingAndIgnoresEntries) {
  AccessLog log(AccessLogConfig{false, path_});
  EXPECT_FALSE(log.enabled());
  log.log(entry(1));
  EXPECT_EQ(log.dropped(), 0u);
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(AccessLogTest, WritesEveryQueuedEntryAsOneLineBeforeDestruction) {
  {
    AccessLog log(AccessLogConfig{true, path_});
    ASSERT_TRUE(log.enabled());
    for (int i = 0; i < 1000; ++i) log.log(entry(i));
  }
  const auto lines = read_lines(path_);
  ASSERT_EQ(lines.size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(boost::json::parse(lines[static_cast<std::size_t>(i)]).at("path").as_string(),
              "/pkg.Svc/Method" + std::to_string(i));
  }
}

TEST_F(AccessLogTest, AppendsToAnExistingFile) {
  { std::ofstream(path_) << "previous line\n"; }
  {
    AccessLog log(AccessLogConfig{true, path_});
    log.log(entry(1));
  }
  const auto lines = read_lines(path_);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "previous line");
}

TEST_F(AccessLogTest, UnopenablePathThrowsNamingIt) {
  try {
    AccessLog log(AccessLogConfig{true, "/nonexistent-dir/x.log"});
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.log"), std::string::npos);
  }
}

TEST_F(AccessLogTest, DropsAndCountsEntriesWhenTheWriterCannotKeepUp) {
  // The writer writes into a pipe nobody reads yet: once the pipe buffer is full it blocks, the
  // queue fills, and further entries must be dropped rather than block the caller.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  StatsRegistry stats;
  uint64_t logged = 0;
  uint64_t dropped = 0;
  std::string received;
  std::thread reader;
  {
    AccessLog log(AccessLogConfig{true, "/dev/fd/" + std::to_string(fds[1])}, 16, &stats);
    ::close(fds[1]);  // the log opened its own descriptor for the pipe
    while (log.dropped() == 0 && logged < 1'000'000) log.log(entry(static_cast<int>(logged++)));
    dropped = log.dropped();
    // Drain the pipe so the destructor can write the rest and close it (EOF ends the reader).
    // No EXPECT/ASSERT may return early before this point: the destructor would block forever.
    reader = std::thread([&received, fd = fds[0]] {
      char chunk[65536];
      for (ssize_t n; (n = ::read(fd, chunk, sizeof(chunk))) > 0;) {
        received.append(chunk, static_cast<std::size_t>(n));
      }
    });
  }
  reader.join();
  ::close(fds[0]);
  uint64_t lines = 0;
  for (char c : received) lines += c == '\n' ? 1 : 0;
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(lines + dropped, logged);  // every entry is either written whole or counted
  EXPECT_EQ(stats.counter(StatName{"server", {}, "access_log_dropped_total"}, "").value(), dropped);
}

}  // namespace
}  // namespace sluice
