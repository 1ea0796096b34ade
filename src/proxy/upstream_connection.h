// One HTTP/2 connection to one upstream endpoint, owned by a worker's UpstreamPool. Streams
// assigned while it connects wait in a pending list and are submitted once it is ready.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/unordered/unordered_flat_set.hpp>
#include <memory>
#include <string>
#include <vector>

#include "src/config/config.h"
#include "src/h2/client_session.h"
#include "src/proxy/h2_connection.h"
#include "src/proxy/upstream_port.h"

namespace sluice {

class UpstreamPool;
struct ClusterStats;

class UpstreamConnection final : public H2Connection,
                                 public h2::ClientSession::Owner,
                                 public UpstreamLink {
 public:
  enum class State { Connecting, Ready, Draining, Closed };

  UpstreamConnection(UpstreamPool& pool, std::size_t endpoint_index,
                     boost::asio::ip::tcp::endpoint endpoint);
  ~UpstreamConnection() override;

  void connect();
  State state() const { return state_; }
  std::size_t endpoint_index() const { return endpoint_index_; }
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

  h2::ClientSession& session() { return *session_; }
  ClusterStats& stats();
  // Stop taking streams and close when the open ones finish (upstream GOAWAY, shutdown).
  void drain();
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
  void on_connect_failed(CloseReason reason, const std::string& error);
  void start_tls();
  void fail_pending(const std::string& message);

  UpstreamPool& pool_;
  std::size_t endpoint_index_;
  boost::asio::ip::tcp::endpoint endpoint_;
  State state_ = State::Connecting;  // until the peer's first SETTINGS
  bool counted_active_ = false;
  boost::asio::steady_timer connect_timer_;
  std::unique_ptr<h2::ClientSession> session_;
  std::vector<UpstreamClient*> pending_;
  boost::unordered_flat_set<UpstreamClient*> active_;
};

}  // namespace sluice
