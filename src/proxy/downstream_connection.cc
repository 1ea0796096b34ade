#include "src/proxy/downstream_connection.h"

#include <boost/asio/post.hpp>

#include "src/proxy/listener_context.h"
#include "src/proxy/proxy_stream.h"
#include "src/proxy/worker_context.h"

namespace sluice {

DownstreamConnection::DownstreamConnection(WorkerContext& worker, ListenerContext& listener,
                                           boost::asio::ip::tcp::socket socket)
    : H2Connection(worker.io(), std::move(socket)), worker_(worker), listener_(listener) {}

DownstreamConnection::~DownstreamConnection() = default;

void DownstreamConnection::start() {
  listener_.stats.downstream_cx_total.inc();
  listener_.stats.downstream_cx_active.add(1);
  listener_.connections.fetch_add(1, std::memory_order_relaxed);
  worker_.drain_tracker().active_connections.fetch_add(1, std::memory_order_relaxed);
  worker_.add_connection(this);
  session_ = std::make_unique<h2::ServerSession>(*this, listener_.config.http2);
  if (worker_.draining()) {
    // Accepted in the same turn the drain started: tell the client right away.
    session_->submit_shutdown_notice();
  }
  start_io(session_.get());
}

h2::StreamEvents* DownstreamConnection::on_new_stream(int32_t stream_id) {
  auto stream = std::make_unique<ProxyStream>(*this, stream_id);
  h2::StreamEvents* events = stream->downstream_events();
  streams_.emplace(stream_id, std::move(stream));
  worker_.drain_tracker().active_streams.fetch_add(1, std::memory_order_relaxed);
  listener_.stats.downstream_rq_active.add(1);
  return events;
}

void DownstreamConnection::stream_finished(int32_t stream_id) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return;
  const bool first = graveyard_.empty();
  graveyard_.push_back(std::move(it->second));
  streams_.erase(it);
  worker_.drain_tracker().active_streams.fetch_sub(1, std::memory_order_relaxed);
  listener_.stats.downstream_rq_active.sub(1);
  if (first) {
    // Destroy after the nghttp2 callback that reported the close has returned.
    boost::asio::post(io(), [self = shared_from_this(), this] { bury_dead_streams(); });
  }
}

void DownstreamConnection::bury_dead_streams() { graveyard_.clear(); }

void DownstreamConnection::shutdown_notice() {
  if (closed() || goaway_sent_) return;
  session_->submit_shutdown_notice();
  schedule_flush();
}

void DownstreamConnection::goaway() {
  if (closed() || goaway_sent_) return;
  goaway_sent_ = true;
  session_->submit_goaway();
  schedule_flush();  // closes by itself once every stream is done (session finished)
}

void DownstreamConnection::terminate_streams(EndReason reason, const std::string& message) {
  std::vector<ProxyStream*> open;
  open.reserve(streams_.size());
  for (auto& [id, s] : streams_) open.push_back(s.get());
  for (ProxyStream* s : open) s->terminate(reason, 14, message);
  if (!goaway_sent_) goaway();
  schedule_flush();
}

void DownstreamConnection::on_bytes_read(std::size_t n) {
  listener_.stats.downstream_bytes_rx_total.inc(n);
}

void DownstreamConnection::on_bytes_written(std::size_t n) {
  listener_.stats.downstream_bytes_tx_total.inc(n);
}

void DownstreamConnection::after_receive() {}

void DownstreamConnection::on_closed(const std::string& reason) {
  if (reason.rfind("protocol error", 0) == 0) {
    listener_.stats.downstream_cx_protocol_error_total.inc();
  }
  // Streams still open lose their client: each one is completed and counted.
  std::vector<std::unique_ptr<ProxyStream>> open;
  open.reserve(streams_.size());
  for (auto& [id, s] : streams_) open.push_back(std::move(s));
  streams_.clear();
  for (auto& s : open) {
    s->on_downstream_gone();
    worker_.drain_tracker().active_streams.fetch_sub(1, std::memory_order_relaxed);
    listener_.stats.downstream_rq_active.sub(1);
  }
  open.clear();
  const auto& c = session_->counters();
  listener_.stats.downstream_rst_rx_total.inc(c.resets_received);
  listener_.stats.downstream_rst_tx_total.inc(c.resets_sent);
  listener_.stats.downstream_cx_active.sub(1);
  listener_.connections.fetch_sub(1, std::memory_order_relaxed);
  worker_.drain_tracker().active_connections.fetch_sub(1, std::memory_order_relaxed);
  worker_.remove_connection(this);
}

}  // namespace sluice
