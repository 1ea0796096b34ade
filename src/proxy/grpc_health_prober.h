// HealthProber that asks grpc.health.v1.Health/Check over HTTP/2 (HealthCheckConnection),
// keeping its connection between checks and opening a new one when that one is gone.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "src/proxy/health_prober.h"

namespace sluice {

class HealthCheckConnection;

class GrpcHealthProber final : public HealthProber {
 public:
  GrpcHealthProber(boost::asio::io_context& io, EndpointAddress address,
                   std::shared_ptr<const UpstreamSettings> settings, HealthCheckConfig config);
  ~GrpcHealthProber() override;

  // HealthProber
  void check(Callback done) override;

  // The factory ClusterMembership takes, making probers on `io`.
  static HealthProberFactory factory(boost::asio::io_context& io);

 private:
  boost::asio::io_context& io_;
  EndpointAddress address_;
  std::shared_ptr<const UpstreamSettings> settings_;
  HealthCheckConfig config_;
  std::shared_ptr<HealthCheckConnection> connection_;
};

}  // namespace sluice
