// What every worker's pool of one cluster is built from. The cluster's membership (main thread)
// publishes a new snapshot whenever the addresses, their health or the configuration change, and
// each worker's UpstreamPool takes it on its own thread (posted; no lock on the call path).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>
#include <vector>

#include "src/config/config.h"

namespace sluice {

// What an upstream connection is built from. A snapshot carrying another UpstreamSettings object
// means the connection-level settings changed: every connection made with the old ones drains
// and new calls get new connections. Pool-level settings (max_stream_duration, backoff, the
// connection cap) are read from ClusterSnapshot::config and apply at once.
struct UpstreamSettings {
  std::shared_ptr<const ClusterConfig> config;
  std::shared_ptr<boost::asio::ssl::context> tls;  // nullptr: h2c
};

// Whether two cluster configs build the same connections (connect_timeout, http2, tls,
// keepalive, max_requests_per_connection).
bool same_connection_settings(const ClusterConfig& a, const ClusterConfig& b);

// One address of the cluster.
struct EndpointAddress {
  boost::asio::ip::tcp::endpoint address;
  std::string host;  // as configured: the TLS server name (unless tls.sni), the :authority
  bool healthy = true;

  bool operator==(const EndpointAddress&) const = default;
};

struct ClusterSnapshot {
  std::shared_ptr<const ClusterConfig> config;
  std::shared_ptr<const UpstreamSettings> settings;
  std::vector<EndpointAddress> addresses;  // each address once
  // Why `addresses` is empty (a name not resolved yet, or that never resolved): the message of
  // the UNAVAILABLE calls get meanwhile.
  std::string no_address_reason;
};

// "127.0.0.1:50051", "[::1]:50051".
std::string address_label(const boost::asio::ip::tcp::endpoint& address);

}  // namespace sluice
