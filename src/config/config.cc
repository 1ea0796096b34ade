#include "src/config/config.h"

namespace sluice {

std::string SocketAddress::to_string() const {
  // IPv6 literals need brackets so that the port separator stays unambiguous.
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

bool path_matches(std::string_view match, std::string_view path) {
  if (!match.empty() && match.back() == '*') {
    return path.substr(0, match.size() - 1) == match.substr(0, match.size() - 1);
  }
  return path == match;
}

Criticality CriticalityConfig::classify(std::string_view path,
                                        std::optional<std::string_view> header_value,
                                        bool* invalid_header) const {
  if (header_value) {
    if (const auto c = parse_criticality(*header_value)) return *c;
    if (invalid_header != nullptr) *invalid_header = true;
  }
  for (const CriticalityRule& rule : methods) {
    if (path_matches(rule.match, path)) return rule.criticality;
  }
  return default_class;
}

const ClusterConfig* Config::find_cluster(const std::string& name) const {
  for (const ClusterConfig& cluster : clusters) {
    if (cluster.name == name) return &cluster;
  }
  return nullptr;
}

const QueueConfig* Config::find_queue(const std::string& name) const {
  for (const QueueConfig& queue : queues) {
    if (queue.name == name) return &queue;
  }
  return nullptr;
}

}  // namespace sluice
