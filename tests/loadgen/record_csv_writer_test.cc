#include "tools/loadgen/record_csv_writer.h"

#include <gtest/gtest.h>

#include <sstream>

namespace sluice::loadgen {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(RecordCsvWriterTest, WritesACallWithTimesInMillisecondsFromTheRunStart) {
  std::ostringstream out;
  RecordCsvWriter writer(out, {"normal"});
  CallRecord r;
  r.id = 3;
  r.scheduled = milliseconds(100);
  r.start = milliseconds(100) + microseconds(250);
  r.end = milliseconds(112);
  r.status = 0;
  r.queue_us = 42;
  writer.write(r);
  auto rows = lines(out.str());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].substr(0, 14), "id,phase,phase");
  EXPECT_EQ(rows[1], "3,0,normal,call,0,100.000,100.250,112.000,11.750,0,OK,42,0,0,");
}

TEST(RecordCsvWriterTest, SkippedSlotsHaveNoTimesStatusOrQueueWait) {
  std::ostringstream out;
  RecordCsvWriter writer(out, {"a", "b"});
  CallRecord r;
  r.id = 9;
  r.phase = 1;
  r.kind = RecordKind::kSkippedCap;
  r.scheduled = milliseconds(5);
  writer.write(r);
  EXPECT_EQ(lines(out.str())[1], "9,1,b,skipped_cap,0,5.000,,,,,,,0,0,");
}

TEST(RecordCsvWriterTest, QuotesMessagesThatHoldCommasOrQuotes) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("queue full, shed"), "\"queue full, shed\"");
  EXPECT_EQ(csv_field("say \"no\""), "\"say \"\"no\"\"\"");
}

}  // namespace
}  // namespace sluice::loadgen
