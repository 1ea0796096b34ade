// Which addresses a new resolution (or a reload) adds and which vanish. The cluster's checker
// uses it per name and for the whole cluster; each worker's pool uses it on every snapshot.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <span>
#include <vector>

namespace sluice {

struct AddressDiff {
  std::vector<boost::asio::ip::tcp::endpoint> added;     // in `after`, not in `before`
  std::vector<boost::asio::ip::tcp::endpoint> vanished;  // in `before`, not in `after`
  bool empty() const { return added.empty() && vanished.empty(); }
};

// Compares two address lists as sets (order and repeats do not matter); each result lists
// every address once, in the order it first appears in its input.
AddressDiff diff_addresses(std::span<const boost::asio::ip::tcp::endpoint> before,
                           std::span<const boost::asio::ip::tcp::endpoint> after);

// `addresses` without repeats, in first-seen order (a resolver may return an address once per
// socket type or once per record).
std::vector<boost::asio::ip::tcp::endpoint> unique_addresses(
    std::span<const boost::asio::ip::tcp::endpoint> addresses);

}  // namespace sluice
