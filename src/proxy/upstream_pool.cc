#include "src/proxy/upstream_pool.h"

#include <algorithm>

#include "src/proxy/cluster_stats.h"
#include "src/proxy/upstream_connection.h"
#include "src/proxy/worker_context.h"

namespace sluice {

UpstreamPool::UpstreamPool(WorkerContext& worker, const ClusterConfig& config,
                           std::vector<boost::asio::ip::tcp::endpoint> endpoints,
                           ClusterStats& stats, std::shared_ptr<boost::asio::ssl::context> tls)
    : worker_(worker),
      config_(config),
      stats_(stats),
      tls_(std::move(tls)),
      jitter_state_(0x9E3779B97F4A7C15ull ^ (worker.worker().index() + 1)) {
  for (auto& ep : endpoints) endpoints_.push_back(Endpoint{ep, 0, {}, {}, std::nullopt});
  // Workers start at different endpoints so load spreads from the first request.
  if (!endpoints_.empty()) next_endpoint_ = worker.worker().index() % endpoints_.size();
}

UpstreamPool::~UpstreamPool() = default;

std::string UpstreamPool::tls_server_name(std::size_t endpoint_index) const {
  if (config_.tls && !config_.tls->sni.empty()) return config_.tls->sni;
  return config_.endpoints[endpoint_index].host;
}

UpstreamConnection* UpstreamPool::pick(std::size_t endpoint_index, const UpstreamLink* avoid) {
  // The oldest ready connection with room, else the oldest connecting one: calls are packed on
  // as few connections as the peer's stream limit allows (like Envoy's HTTP/2 pool), so one
  // socket write carries many calls and a connection opened for a burst can go idle.
  UpstreamConnection* connecting = nullptr;
  for (auto& c : connections_) {
    if (c->endpoint_index() != endpoint_index || !c->has_capacity()) continue;
    if (static_cast<const UpstreamLink*>(c.get()) == avoid) continue;
    if (c->state() == UpstreamConnection::State::Ready) return c.get();
    if (connecting == nullptr) connecting = c.get();
  }
  return connecting;
}

UpstreamConnection* UpstreamPool::open_connection(std::size_t idx) {
  auto conn = std::make_shared<UpstreamConnection>(*this, idx, endpoints_[idx].address);
  connections_.push_back(conn);
  stats_.upstream_cx_total.inc();
  conn->connect();
  return conn.get();
}

bool UpstreamPool::assign_to(std::size_t idx, UpstreamClient& client, const UpstreamLink* avoid) {
  const std::size_t n = endpoints_.size();
  Endpoint& ep = endpoints_[idx];
  if (UpstreamConnection* conn = pick(idx, avoid)) {
    next_endpoint_ = (idx + 1) % n;
    conn->add_stream(client);
    return true;
  }
  if (ep.consecutive_failures > 0 && LoopTime::now() < ep.retry_at) return false;  // in backoff
  std::size_t open = 0;
  UpstreamConnection* least = nullptr;
  for (auto& c : connections_) {
    if (c->endpoint_index() != idx) continue;
    const auto st = c->state();
    if (st != UpstreamConnection::State::Ready && st != UpstreamConnection::State::Connecting)
      continue;
    ++open;
    if (least == nullptr || c->load() < least->load()) least = c.get();
  }
  next_endpoint_ = (idx + 1) % n;
  if (open >= config_.max_connections_per_endpoint && least != nullptr) {
    least->add_stream(client);  // every connection is full: nghttp2 queues the stream
    return true;
  }
  open_connection(idx)->add_stream(client);
  return true;
}

void UpstreamPool::probe(std::size_t idx, TimePoint now) {
  const Endpoint& ep = endpoints_[idx];
  if (now < ep.retry_at) return;
  for (auto& c : connections_) {
    if (c->endpoint_index() == idx && c->state() == UpstreamConnection::State::Connecting) return;
  }
  open_connection(idx);
}

void UpstreamPool::assign(UpstreamClient& client, const UpstreamLink* avoid) {
  const std::size_t n = endpoints_.size();
  const TimePoint now = LoopTime::now();
  // Healthy endpoints first, in round-robin order; then the failing ones out of backoff (the
  // stream waits for their new connection), so a frozen or restarting endpoint costs a caller
  // a wait only when nothing else can serve it.
  const std::size_t first = next_endpoint_;
  for (const bool healthy : {true, false}) {
    for (std::size_t attempt = 0; attempt < n; ++attempt) {
      const std::size_t idx = (first + attempt) % n;
      const bool failing = endpoints_[idx].consecutive_failures > 0;
      if (healthy && failing) {
        if (n > 1) probe(idx, now);
        continue;
      }
      if (!healthy && !failing) continue;
      if (assign_to(idx, client, avoid)) return;
    }
  }
  // Every endpoint is in backoff after failing: answer now rather than queue.
  stats_.upstream_rq_unavailable_total.inc();
  std::string why;
  for (const Endpoint& ep : endpoints_) {
    if (!why.empty()) why += "; ";
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(ep.retry_at - now);
    why += ep.address.address().to_string() + ":" + std::to_string(ep.address.port()) + ": " +
           ep.last_error + " (next attempt in " +
           std::to_string(std::max<int64_t>(0, wait.count())) + "ms)";
  }
  client.on_upstream_unavailable("upstream cluster '" + config_.name + "' unavailable: " + why);
}

Duration UpstreamPool::backoff(uint32_t failures) {
  Duration d = config_.reconnect_backoff_base;
  for (uint32_t i = 1; i < failures && d < config_.reconnect_backoff_max; ++i) d *= 2;
  d = std::min(d, config_.reconnect_backoff_max);
  // +-20% jitter so workers and sidecars do not retry in lockstep.
  jitter_state_ ^= jitter_state_ << 13;
  jitter_state_ ^= jitter_state_ >> 7;
  jitter_state_ ^= jitter_state_ << 17;
  const double f = 0.8 + 0.4 * static_cast<double>(jitter_state_ % 1000) / 1000.0;
  return std::chrono::duration_cast<Duration>(d * f);
}

void UpstreamPool::on_connect_result(UpstreamConnection& conn, bool ok, const std::string& error) {
  Endpoint& ep = endpoints_[conn.endpoint_index()];
  if (ok) {
    ep.consecutive_failures = 0;
    ep.last_error.clear();
    return;
  }
  ++ep.consecutive_failures;
  ep.last_error = error;
  ep.retry_at = SteadyClock::now() + backoff(ep.consecutive_failures);
}

void UpstreamPool::on_connection_closed(UpstreamConnection& conn) {
  auto it = std::find_if(connections_.begin(), connections_.end(),
                         [&](const auto& c) { return c.get() == &conn; });
  if (it != connections_.end()) connections_.erase(it);
}

void UpstreamPool::drain() {
  draining_ = true;
  auto conns = connections_;
  for (auto& c : conns) c->drain();
}

void UpstreamPool::close_all() {
  auto conns = connections_;
  for (auto& c : conns) c->close_now(CloseReason::Shutdown, "shutdown");
}

}  // namespace sluice
