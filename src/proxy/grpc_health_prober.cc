#include "src/proxy/grpc_health_prober.h"

#include "src/proxy/health_check_connection.h"

namespace sluice {

GrpcHealthProber::GrpcHealthProber(boost::asio::io_context& io, EndpointAddress address,
                                   std::shared_ptr<const UpstreamSettings> settings,
                                   HealthCheckConfig config)
    : io_(io),
      address_(std::move(address)),
      settings_(std::move(settings)),
      config_(std::move(config)) {}

GrpcHealthProber::~GrpcHealthProber() {
  if (connection_) connection_->abandon();
}

void GrpcHealthProber::check(Callback done) {
  if (!connection_ || !connection_->reusable()) {
    if (connection_) connection_->abandon();
    connection_ =
        std::make_shared<HealthCheckConnection>(io_, address_, settings_, config_.service);
  }
  connection_->start_check(config_.timeout, std::move(done));
}

HealthProberFactory GrpcHealthProber::factory(boost::asio::io_context& io) {
  return [&io](const EndpointAddress& address, std::shared_ptr<const UpstreamSettings> settings,
               const HealthCheckConfig& config) -> std::unique_ptr<HealthProber> {
    return std::make_unique<GrpcHealthProber>(io, address, std::move(settings), config);
  };
}

}  // namespace sluice
