#include "src/config/config.h"

namespace sluice {

std::string SocketAddress::to_string() const {
  // IPv6 literals need brackets so that the port separator stays unambiguous.
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

const ClusterConfig* Config::find_cluster(const std::string& name) const {
  for (const ClusterConfig& cluster : clusters) {
    if (cluster.name == name) return &cluster;
  }
  return nullptr;
}

}  // namespace sluice
