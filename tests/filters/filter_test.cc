#include "filters/filter.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace sluice {
namespace {

TEST(FilterTest, EveryEndReasonHasADistinctStableName) {
  const std::set<std::string> names = {to_string(EndReason::Completed),
                                       to_string(EndReason::Shed),
                                       to_string(EndReason::ClientReset),
                                       to_string(EndReason::DeadlineExceeded),
                                       to_string(EndReason::UpstreamUnavailable),
                                       to_string(EndReason::UpstreamReset),
                                       to_string(EndReason::Drained),
                                       to_string(EndReason::Internal)};
  EXPECT_EQ(names.size(), 8u);
  EXPECT_EQ(std::string(to_string(EndReason::DeadlineExceeded)), "deadline_exceeded");
  EXPECT_EQ(std::string(to_string(EndReason::ClientReset)), "client_reset");
}

}  // namespace
}  // namespace sluice
