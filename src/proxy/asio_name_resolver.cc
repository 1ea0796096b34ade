#include "src/proxy/asio_name_resolver.h"

#include <memory>

#include "src/proxy/address_diff.h"

namespace sluice {

using tcp = boost::asio::ip::tcp;

void AsioNameResolver::resolve(const std::string& host, uint16_t port, Callback done) {
  // One resolver per lookup: it lives in its handler, so a pending lookup needs no owner.
  auto resolver = std::make_shared<tcp::resolver>(io_);
  // numeric_service only: no AI_ADDRCONFIG, so IPv6 addresses come back whatever the local
  // interfaces are (a connection that cannot be made fails and backs off like any other).
  resolver->async_resolve(
      host, std::to_string(port), tcp::resolver::numeric_service,
      [resolver, done = std::move(done)](const boost::system::error_code& ec,
                                         const tcp::resolver::results_type& results) {
        Result r;
        if (ec) {
          r.error = ec.message();
        } else {
          std::vector<tcp::endpoint> all;
          for (const auto& entry : results) all.push_back(entry.endpoint());
          r.addresses = unique_addresses(all);
          if (r.addresses.empty()) r.error = "no addresses";
        }
        done(std::move(r));
      });
}

}  // namespace sluice
