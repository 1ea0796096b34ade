// NameResolver with the system resolver (getaddrinfo: /etc/hosts, then DNS, as nsswitch.conf
// says), through Asio's asynchronous resolver: the blocking call runs on Asio's resolver thread
// and the answer is posted back to the io_context, which is never blocked.
#pragma once

#include <boost/asio/io_context.hpp>

#include "src/proxy/name_resolver.h"

namespace sluice {

class AsioNameResolver final : public NameResolver {
 public:
  explicit AsioNameResolver(boost::asio::io_context& io) : io_(io) {}

  // NameResolver
  void resolve(const std::string& host, uint16_t port, Callback done) override;

 private:
  boost::asio::io_context& io_;
};

}  // namespace sluice
