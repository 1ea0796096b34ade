// An upstream address for the membership tests: ep("10.0.0.1") is 10.0.0.1:50051.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>

namespace sluice {

inline boost::asio::ip::tcp::endpoint ep(const char* address, uint16_t port = 50051) {
  return {boost::asio::ip::make_address(address), port};
}

}  // namespace sluice
