// One HTTP/2 connection to one upstream address, owned by a worker's UpstreamPool. Streams
// assigned while it connects wait in a pending list and are submitted once it is ready. It
// checks its peer with PING keepalive, and retires itself (drains; the pool opens another) after
// clusters[].max_requests_per_connection streams or when nghttp2 runs out of stream ids. It keeps
// the settings it was made with for its whole life: a reload that changes them drains it.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/unordered/unordered_flat_set.hpp>
#include <memory>
#include <string>
#include <vector>

#include "src/config/config.h"
#include "src/h2/client_session.h"
#include "src/proxy/cluster_snapshot.h"
#include "src/proxy/h2_connection.h"
#include "src/proxy/upstream_endpoint.h"
#include "src/proxy/upstream_port.h"

namespace sluice {

class UpstreamPool;
struct ClusterStats;

class UpstreamConnection final : public H2Connection,
                                 public h2::ClientSession::Owner,
                                 public UpstreamLink {
 public:
  enum class State { Connecting, Ready, Draining, Closed };

  UpstreamConnection(UpstreamPool& pool, std::shared_ptr<UpstreamEndpoint> endpoint,
                     std::shared_ptr<const UpstreamSettings> settings);
  ~UpstreamConnection() override;

  void connect();
  State state() const { return state_; }
  UpstreamEndpoint& endpoint() const { return *endpoint_; }
  // The settings it was made with (not necessarily the cluster's current ones).
  const ClusterConfig& config() const { return *settings_->config; }
  // Streams assigned (pending + open).
  std::size_t load() const { return pending_.size() + active_.size(); }
  // Can take another stream without exceeding the peer's SETTINGS_MAX_CONCURRENT_STREAMS.
  bool has_capacity() const;

  // Assigns a stream: submitted now when ready, else when the connection is up.
  void add_stream(UpstreamClient& client);

  // UpstreamLink
  int32_t submit(const std::vector<nghttp2_nv>& headers, bool with_body,
                 h2::StreamEvents* events) override;
  void resume_request(int32_t stream_id) override;
  void consume_response(int32_t stream_id, std::size_t n) override;
  void cancel(int32_t stream_id) override;
  // A stream is done with this connection (closed, cancelled, or gone while pending).
  void release(UpstreamClient& client) override;
  bool request_sent(int32_t stream_id) const override;

  h2::ClientSession& session() { return *session_; }
  ClusterStats& stats();
  // Stop taking streams and close when the open ones finish (upstream GOAWAY, shutdown).
  void drain();
  // Its endpoint left the pool (the address vanished or was removed, the settings changed):
  // no new streams; the open ones finish, then it closes. Streams still waiting for it to
  // connect go back to the pool, which sends them elsewhere (nothing of them was sent).
  void retire_from_pool(const char* why);
  // Closes now; open streams learn they lost their upstream.
  void close_now(CloseReason reason, const std::string& message) { close(reason, message); }

  // h2::ClientSession::Owner
  void on_goaway(int32_t last_stream_id, uint32_t error_code) override;
  void on_remote_settings() override;

 private:
  // H2Connection
  void on_bytes_read(std::size_t n) override;
  void on_bytes_written(std::size_t n) override;
  void on_closed(CloseReason reason, const std::string& message) override;
  // The cluster's counters for a connection closed (or never opened) for `reason`.
  void count_close(CloseReason reason) override;
  bool should_close_when_idle() const override { return state_ == State::Draining; }

  void on_connected();
  // Keepalive (clusters[].keepalive): PING after `interval` without input while streams are
  // open; no input within `timeout` after it closes the connection as dead.
  void arm_keepalive(Duration after);
  void on_keepalive_tick();
  void on_keepalive_timeout();
  // No new streams from now on; close once the open ones finish.
  void retire(const char* why);
  void on_connect_failed(CloseReason reason, const std::string& error);
  void start_tls();
  void fail_pending(const std::string& message);

  // The TLS server name: tls.sni, else the endpoint's configured host.
  std::string tls_server_name() const;

  UpstreamPool& pool_;
  std::shared_ptr<UpstreamEndpoint> endpoint_;
  std::shared_ptr<const UpstreamSettings> settings_;
  State state_ = State::Connecting;  // until the peer's first SETTINGS
  bool counted_active_ = false;
  boost::asio::steady_timer connect_timer_;
  boost::asio::steady_timer keepalive_timer_;
  TimePoint last_read_{};                  // the last bytes from the peer
  std::optional<TimePoint> ping_sent_at_;  // a PING waits for its answer
  TimePoint last_ping_{};
  uint64_t quiet_frames_ = 0;     // the peer's HEADERS + DATA count when the quiet stretch began
  uint32_t pings_in_quiet_ = 0;   // PINGs sent since the peer last sent HEADERS or DATA
  uint32_t streams_started_ = 0;  // request streams opened (max_requests_per_connection)
  std::unique_ptr<h2::ClientSession> session_;
  std::vector<UpstreamClient*> pending_;
  boost::unordered_flat_set<UpstreamClient*> active_;
};

}  // namespace sluice
