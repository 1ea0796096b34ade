// Resolving an endpoint's host name, as ClusterMembership sees it: an interface, so tests can
// answer with any addresses at any time; AsioNameResolver is the real one.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sluice {

class NameResolver {
 public:
  struct Result {
    std::vector<boost::asio::ip::tcp::endpoint> addresses;
    std::string error;  // empty: resolved (then `addresses` is not empty)
  };
  using Callback = std::function<void(Result)>;

  virtual ~NameResolver() = default;
  // Resolves `host` to every address it has, IPv4 and IPv6, each with `port`, without blocking
  // the caller's event loop; `done` runs later on that loop, never inside this call.
  virtual void resolve(const std::string& host, uint16_t port, Callback done) = 0;
};

}  // namespace sluice
