// One client connection: an HTTP/2 server session whose streams are ProxyStreams.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <boost/unordered/unordered_flat_map.hpp>
#include <memory>
#include <string>
#include <vector>

#include "filters/filter.h"
#include "src/core/time.h"
#include "src/h2/server_session.h"
#include "src/proxy/downstream_port.h"
#include "src/proxy/h2_connection.h"
#include "src/proxy/stream_context.h"

namespace sluice {

class ProxyStream;
class WorkerContext;
struct ConnectionSettings;
struct ListenerContext;

class DownstreamConnection final : public H2Connection,
                                   public h2::ServerSession::Owner,
                                   public DownstreamPort {
 public:
  // Holds `listener` until the connection is gone: a listener removed or moved by a reload
  // lives on while its connections drain.
  DownstreamConnection(WorkerContext& worker, std::shared_ptr<ListenerContext> listener,
                       boost::asio::ip::tcp::socket socket);
  ~DownstreamConnection() override;

  void start();
  WorkerContext& worker() { return worker_; }
  ListenerContext& listener() { return *listener_; }

  // Drain, phase 1: GOAWAY with the maximum stream id (clients stop opening streams soon).
  void shutdown_notice();
  // Drain, phase 2: GOAWAY with the last stream id processed; closes once streams finish.
  void goaway();
  // drain_timeout expired: end every stream with a status or a reset, then close.
  void terminate_streams(EndReason reason, const std::string& message);

  // DownstreamPort
  h2::ServerSession& session() override { return *session_; }
  void schedule_flush() override { H2Connection::schedule_flush(); }
  void stream_finished(int32_t stream_id, bool premature) override;
  std::size_t stream_count() const { return streams_.size(); }
  // Closes the socket now; open streams are completed as client resets.
  void close_now(CloseReason reason, const std::string& message) { close(reason, message); }

  // h2::ServerSession::Owner
  h2::StreamEvents* on_new_stream(int32_t stream_id) override;
  void on_client_settings() override { preface_received_ = true; }
  void on_stream_refused() override;

 private:
  // H2Connection
  void on_bytes_read(std::size_t n) override;
  void on_bytes_written(std::size_t n) override;
  void after_receive() override;
  void on_closed(CloseReason reason, const std::string& message) override;
  // The listener's counter for connections closed for `reason`, if it keeps one.
  void count_close(CloseReason reason) override;
  bool should_close_when_idle() const override { return true; }

  void bury_dead_streams();
  // Premature-reset accounting of one stream that ended; closes the connection past the limit.
  void count_stream_end(bool premature);
  void start_session();
  // Connection-level timeouts, checked by one periodic timer (see ConnectionLimits).
  void arm_tick();
  void on_tick();

  WorkerContext& worker_;
  const std::shared_ptr<ListenerContext> listener_;
  // The listener's HTTP/2 settings, limits and TLS context when this connection was accepted: a
  // reload that changes them applies to new connections.
  const std::shared_ptr<const ConnectionSettings> settings_;
  StreamContext stream_context_;  // what every stream of this connection is given
  std::unique_ptr<h2::ServerSession> session_;
  boost::unordered_flat_map<int32_t, std::unique_ptr<ProxyStream>> streams_;
  // Streams that finished inside an nghttp2 callback; destroyed after it returns.
  std::vector<std::unique_ptr<ProxyStream>> graveyard_;
  bool goaway_sent_ = false;
  bool notice_sent_ = false;
  bool preface_received_ = false;
  TimePoint accepted_at_;
  TimePoint last_activity_;  // last complete frame received, or stream finished
  uint64_t frames_seen_ = 0;
  boost::asio::steady_timer tick_timer_;
  Duration tick_period_{};
  // Premature-reset accounting (Envoy's rule): streams closed, and those the client reset
  // before any response.
  uint64_t closed_streams_ = 0;
  uint64_t premature_resets_ = 0;
  bool premature_close_ = false;
};

}  // namespace sluice
