#include "src/queue/queue_envelope.h"

#include <gtest/gtest.h>

namespace sluice::queue {
namespace {

QueueEnvelope sample() {
  QueueEnvelope e;
  e.method = "/sluice.test.Echo/Unary";
  e.call_id = "17";
  e.reply_to = "sluice:work:reply:host-1:4242:9f3a";
  e.frontend = "host-1:4242:9f3a";
  e.deadline_unix_ms = 1'700'000'000'250;
  e.enqueued_unix_ms = 1'700'000'000'000;
  e.attempt = 1;
  e.metadata = {{"content-type", "application/grpc"},
                {"trace-bin", std::string("\0\x01\x02\r\n\xff", 6)},
                {"x-tenant", "a"},
                {"x-tenant", "b"}};
  e.body = std::string("\0\0\0\0\x03\x0a\x01z", 8);
  return e;
}

std::string field(const StreamFields& f, const std::string& name) {
  for (const auto& [n, v] : f) {
    if (n == name) return v;
  }
  return "<absent>";
}

TEST(QueueEnvelopeTest, RoundTripsBinaryMetadataAndBodyByteExact) {
  const QueueEnvelope e = sample();
  const auto back = QueueEnvelope::decode(e.encode());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, e);
}

TEST(QueueEnvelopeTest, RoundTripsEmptyBodyEmptyMetadataAndNoDeadline) {
  QueueEnvelope e = sample();
  e.body.clear();
  e.metadata.clear();
  e.deadline_unix_ms = 0;
  e.frontend.clear();
  const auto back = QueueEnvelope::decode(e.encode());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, e);
  EXPECT_FALSE(back->remaining_ms(1).has_value());
}

TEST(QueueEnvelopeTest, LaysOutOneReadableFieldPerItemVersionFirst) {
  const StreamFields f = sample().encode();
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0], (std::pair<std::string, std::string>("v", "1")));
  EXPECT_EQ(field(f, "method"), "/sluice.test.Echo/Unary");
  EXPECT_EQ(field(f, "deadline_ms"), "1700000000250");
  EXPECT_EQ(field(f, "enqueued_ms"), "1700000000000");
  EXPECT_EQ(field(f, "attempt"), "1");
  EXPECT_EQ(field(f, "meta").substr(0, 32), "12:content-type,16:application/g");
}

TEST(QueueEnvelopeTest, IgnoresFieldsItDoesNotKnowInAnyOrder) {
  StreamFields f = sample().encode();
  f.emplace_back("future_field", "x");
  std::reverse(f.begin(), f.end());
  const auto back = QueueEnvelope::decode(f);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, sample());
}

TEST(QueueEnvelopeTest, RefusesAnotherVersionBeforeLookingAtOtherFields) {
  StreamFields f = {{"method", "not-a-path"}, {"v", "2"}};
  const auto r = QueueEnvelope::decode(f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "v: unsupported envelope version");
  EXPECT_EQ(QueueEnvelope::decode({{"v", "one"}}).error().message, "v: not a number");
}

TEST(QueueEnvelopeTest, NamesTheMissingField) {
  for (const char* name : {"v", "method", "call_id", "reply_to", "deadline_ms", "meta", "body"}) {
    StreamFields f;
    for (auto& kv : sample().encode()) {
      if (kv.first != name) f.push_back(kv);
    }
    const auto r = QueueEnvelope::decode(f);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().message, std::string(name) + ": missing");
  }
  // The optional ones take their defaults.
  StreamFields f;
  for (auto& kv : sample().encode()) {
    if (kv.first != "frontend" && kv.first != "enqueued_ms" && kv.first != "attempt") {
      f.push_back(kv);
    }
  }
  const auto r = QueueEnvelope::decode(f);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->attempt, 1u);
  EXPECT_EQ(r->enqueued_unix_ms, 0);
}

TEST(QueueEnvelopeTest, RejectsMalformedAndRepeatedFields) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"deadline_ms", "-1"},  {"deadline_ms", "12x"},    {"deadline_ms", ""}, {"enqueued_ms", "z"},
      {"attempt", "0"},       {"attempt", "4294967296"}, {"meta", "3:ab,"},   {"method", ""},
      {"method", "no-slash"}, {"call_id", ""},           {"reply_to", ""},
  };
  for (const auto& [name, value] : bad) {
    StreamFields f = sample().encode();
    for (auto& kv : f) {
      if (kv.first == name) kv.second = value;
    }
    const auto r = QueueEnvelope::decode(f);
    ASSERT_FALSE(r.ok()) << name << "=" << value;
    EXPECT_EQ(r.error().message, name + ": malformed");
  }
  StreamFields twice = sample().encode();
  twice.emplace_back("body", "again");
  EXPECT_EQ(QueueEnvelope::decode(twice).error().message, "body: repeated");
}

TEST(QueueEnvelopeTest, RemainingTimeIsTheDeadlineMinusNow) {
  const QueueEnvelope e = sample();
  EXPECT_EQ(e.remaining_ms(1'700'000'000'000), 250);
  EXPECT_EQ(e.remaining_ms(1'700'000'000'300), -50);
}

TEST(QueueEnvelopeTest, UnixMsNowIsWallClockTime) {
  // 2023-11-14 and 2100-01-01: a steady clock (boot-relative) would be far below.
  EXPECT_GT(unix_ms_now(), 1'700'000'000'000);
  EXPECT_LT(unix_ms_now(), 4'102'444'800'000);
}

}  // namespace
}  // namespace sluice::queue
