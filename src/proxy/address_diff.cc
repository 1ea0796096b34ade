#include "src/proxy/address_diff.h"

#include <algorithm>

namespace sluice {

using tcp = boost::asio::ip::tcp;

namespace {
bool contains(std::span<const tcp::endpoint> list, const tcp::endpoint& e) {
  return std::find(list.begin(), list.end(), e) != list.end();
}
}  // namespace

std::vector<tcp::endpoint> unique_addresses(std::span<const tcp::endpoint> addresses) {
  std::vector<tcp::endpoint> out;
  for (const tcp::endpoint& e : addresses) {
    if (!contains(out, e)) out.push_back(e);
  }
  return out;
}

AddressDiff diff_addresses(std::span<const tcp::endpoint> before,
                           std::span<const tcp::endpoint> after) {
  // Lists are a handful of addresses (a Service's pods): linear scans beat building sets.
  AddressDiff d;
  for (const tcp::endpoint& e : unique_addresses(after)) {
    if (!contains(before, e)) d.added.push_back(e);
  }
  for (const tcp::endpoint& e : unique_addresses(before)) {
    if (!contains(after, e)) d.vanished.push_back(e);
  }
  return d;
}

}  // namespace sluice
