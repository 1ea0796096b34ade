// One address's active health checks, as ClusterMembership sees them: an interface, so tests
// decide every verdict; GrpcHealthProber asks grpc.health.v1.Health/Check for real.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "src/config/config.h"
#include "src/proxy/cluster_snapshot.h"

namespace sluice {

struct HealthCheckOutcome {
  bool serving = false;
  std::string detail;  // why not: "NOT_SERVING", "timeout after 1000ms", "connect failed: ..."
};

class HealthProber {
 public:
  using Callback = std::function<void(HealthCheckOutcome)>;

  // Destroying a prober ends its check in progress: its callback never runs afterwards.
  virtual ~HealthProber() = default;
  // Asks the address once. `done` runs later on the caller's loop (never inside this call),
  // within the configured timeout. One check at a time.
  virtual void check(Callback done) = 0;
};

// Makes the prober of one address, with the cluster's connection settings (TLS, HTTP/2) and
// its health_check block.
using HealthProberFactory = std::function<std::unique_ptr<HealthProber>(
    const EndpointAddress& address, std::shared_ptr<const UpstreamSettings> settings,
    const HealthCheckConfig& config)>;

}  // namespace sluice
