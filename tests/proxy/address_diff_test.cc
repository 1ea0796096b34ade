#include "src/proxy/address_diff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/proxy/endpoint.h"

namespace sluice {
namespace {

using boost::asio::ip::make_address;
using tcp = boost::asio::ip::tcp;
using testing::ElementsAre;
using testing::IsEmpty;

TEST(AddressDiffTest, APodThatAppearsIsAddedAndOneThatGoesVanishes) {
  const std::vector<tcp::endpoint> before{ep("10.0.0.1"), ep("10.0.0.2")};
  const std::vector<tcp::endpoint> after{ep("10.0.0.2"), ep("10.0.0.3")};
  const AddressDiff d = diff_addresses(before, after);
  EXPECT_THAT(d.added, ElementsAre(ep("10.0.0.3")));
  EXPECT_THAT(d.vanished, ElementsAre(ep("10.0.0.1")));
  EXPECT_FALSE(d.empty());
}

TEST(AddressDiffTest, OrderAndRepeatsDoNotMakeAChange) {
  const std::vector<tcp::endpoint> before{ep("10.0.0.1"), ep("::1"), ep("10.0.0.1")};
  const std::vector<tcp::endpoint> after{ep("::1"), ep("10.0.0.1")};
  EXPECT_TRUE(diff_addresses(before, after).empty());
}

TEST(AddressDiffTest, IPv4AndIPv6AndPortsAreDifferentAddresses) {
  const std::vector<tcp::endpoint> before{ep("127.0.0.1")};
  const std::vector<tcp::endpoint> after{ep("127.0.0.1"), ep("::1"), ep("127.0.0.1", 50052)};
  const AddressDiff d = diff_addresses(before, after);
  EXPECT_THAT(d.added, ElementsAre(ep("::1"), ep("127.0.0.1", 50052)));
  EXPECT_THAT(d.vanished, IsEmpty());
}

TEST(AddressDiffTest, EverythingVanishesWhenTheNewSetIsEmptyAndEachAddressIsListedOnce) {
  const std::vector<tcp::endpoint> before{ep("10.0.0.1"), ep("10.0.0.2"), ep("10.0.0.1")};
  const AddressDiff d = diff_addresses(before, {});
  EXPECT_THAT(d.added, IsEmpty());
  EXPECT_THAT(d.vanished, ElementsAre(ep("10.0.0.1"), ep("10.0.0.2")));
}

TEST(AddressDiffTest, UniqueAddressesKeepsFirstSeenOrder) {
  const std::vector<tcp::endpoint> in{ep("10.0.0.2"), ep("10.0.0.1"), ep("10.0.0.2"), ep("::1")};
  EXPECT_THAT(unique_addresses(in), ElementsAre(ep("10.0.0.2"), ep("10.0.0.1"), ep("::1")));
}

}  // namespace
}  // namespace sluice
