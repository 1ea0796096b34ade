// A connection of its own from the cluster's checker (main thread) to one address, for
// grpc.health.v1.Health/Check: one check (one stream) at a time, kept open between checks.
// Not a pool connection: the pools live on the workers (one check per worker would multiply
// the load on the upstream), and a check must also find out whether a new connection can be
// made, which an old pooled one would hide. A connection that failed, timed out or got GOAWAY
// is not reused: the next check opens another.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "src/h2/body_buffer.h"
#include "src/h2/client_session.h"
#include "src/h2/stream_events.h"
#include "src/proxy/cluster_snapshot.h"
#include "src/proxy/h2_connection.h"
#include "src/proxy/health_prober.h"

namespace sluice {

class HealthCheckConnection final : public H2Connection,
                                    public h2::ClientSession::Owner,
                                    public h2::StreamEvents {
 public:
  using Done = std::function<void(HealthCheckOutcome)>;

  HealthCheckConnection(boost::asio::io_context& io, EndpointAddress address,
                        std::shared_ptr<const UpstreamSettings> settings, std::string service);
  ~HealthCheckConnection() override;

  // Asks once (connecting first if needed); `done` runs once, posted, within `timeout`, unless
  // abandon() comes first. One check at a time.
  void start_check(Duration timeout, Done done);
  // The prober is going: `done` never runs, and the connection closes.
  void abandon();
  // Can carry the next check (connecting or ready, no GOAWAY, not closed).
  bool reusable() const;

  // h2::ClientSession::Owner
  void on_goaway(int32_t last_stream_id, uint32_t error_code) override;
  void on_remote_settings() override;

  // h2::StreamEvents (the check's stream)
  void on_headers_begin(bool initial) override;
  uint32_t on_header(std::string_view name, std::string_view value, bool never_indexed) override;
  void on_headers_end(bool end_stream) override;
  void on_data(const uint8_t* data, std::size_t length) override;
  void on_data_end() override;
  void on_close(uint32_t error_code) override;
  h2::BodyBuffer* outgoing() override { return &request_; }
  void on_outgoing_sent(std::size_t /*n*/) override {}

 private:
  enum class State { Idle, Connecting, Ready, Draining, Closed };

  // H2Connection
  void on_bytes_read(std::size_t /*n*/) override {}
  void on_bytes_written(std::size_t /*n*/) override {}
  void on_closed(CloseReason reason, const std::string& message) override;
  void count_close(CloseReason /*reason*/) override {}

  void connect();
  void on_connected();
  void submit();
  // The response ended: judge it.
  void complete();
  // Ends the check in progress with `outcome` (posted to its caller).
  void finish(HealthCheckOutcome outcome);
  std::string tls_server_name() const;

  EndpointAddress address_;
  std::shared_ptr<const UpstreamSettings> settings_;
  std::string service_;
  State state_ = State::Idle;
  bool abandoned_ = false;
  boost::asio::steady_timer timer_;  // the check's timeout
  Duration timeout_{};
  std::unique_ptr<h2::ClientSession> session_;
  // The check in progress.
  Done done_;
  int32_t stream_id_ = -1;
  h2::BodyBuffer request_;
  std::string response_;
  std::optional<std::string> http_status_;
  std::optional<std::string> grpc_status_;
  std::string grpc_message_;
};

}  // namespace sluice
