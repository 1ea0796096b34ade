#include "integration/client/call_result.h"

#include <gtest/gtest.h>

namespace sluice::itest {
namespace {

TEST(ItestCallResultTest, NamesCanonicalStatusCodes) {
  EXPECT_EQ(status_name(0), "OK");
  EXPECT_EQ(status_name(4), "DEADLINE_EXCEEDED");
  EXPECT_EQ(status_name(8), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(status_name(14), "UNAVAILABLE");
  EXPECT_EQ(status_name(16), "UNAUTHENTICATED");
  EXPECT_EQ(status_name(17), "UNKNOWN_CODE_17");
  EXPECT_EQ(status_name(-1), "UNKNOWN_CODE_-1");
}

TEST(ItestCallResultTest, BinaryMetadataIsBase64InJsonAndRepeatedKeysBecomeLists) {
  CallResult r;
  r.trailing_metadata = {{"x-a", "1"}, {"x-a", "2"}, {"x-b-bin", std::string("\x00\xff", 2)}};
  boost::json::object json = to_json(r);
  const auto& trailers = json.at("trailing_metadata").as_object();
  EXPECT_EQ(trailers.at("x-a"), (boost::json::array{"1", "2"}));
  EXPECT_EQ(trailers.at("x-b-bin"), (boost::json::array{"AP8="}));
}

TEST(ItestCallResultTest, ResponseCountsAppearOnlyWhenTheUpstreamReportedThem) {
  CallResult r;
  EXPECT_FALSE(to_json(r).contains("response"));
  r.processed = std::make_pair(uint64_t{7}, uint64_t{700});
  boost::json::object json = to_json(r);
  EXPECT_EQ(json.at("response").at("messages_processed").to_number<uint64_t>(), 7u);
  EXPECT_EQ(json.at("response").at("bytes_processed").to_number<uint64_t>(), 700u);
}

TEST(ItestCallResultTest, StatusFieldsAreReported) {
  CallResult r;
  r.status_code = 9;
  r.status_message = "nope";
  boost::json::object json = to_json(r);
  EXPECT_EQ(json.at("status_code").to_number<int>(), 9);
  EXPECT_EQ(json.at("status_name"), "FAILED_PRECONDITION");
  EXPECT_EQ(json.at("status_message"), "nope");
}

}  // namespace
}  // namespace sluice::itest
