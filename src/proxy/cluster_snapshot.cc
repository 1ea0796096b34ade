#include "src/proxy/cluster_snapshot.h"

namespace sluice {

bool same_connection_settings(const ClusterConfig& a, const ClusterConfig& b) {
  return a.connect_timeout == b.connect_timeout && a.http2 == b.http2 && a.tls == b.tls &&
         a.keepalive == b.keepalive &&
         a.max_requests_per_connection == b.max_requests_per_connection;
}

std::string address_label(const boost::asio::ip::tcp::endpoint& address) {
  const std::string ip = address.address().to_string();
  const std::string port = std::to_string(address.port());
  return address.address().is_v6() ? "[" + ip + "]:" + port : ip + ":" + port;
}

}  // namespace sluice
