#include "src/proxy/upstream_pool.h"

#include <algorithm>

#include "src/proxy/cluster_stats.h"
#include "src/proxy/upstream_connection.h"
#include "src/proxy/worker_context.h"

namespace sluice {

UpstreamPool::UpstreamPool(WorkerContext& worker, ClusterStats& stats,
                           std::shared_ptr<const ClusterSnapshot> snapshot)
    : worker_(worker),
      stats_(stats),
      jitter_state_(0x9E3779B97F4A7C15ull ^ (worker.worker().index() + 1)) {
  update(std::move(snapshot));
  // Workers start at different endpoints so load spreads from the first request.
  if (!endpoints_.empty()) next_endpoint_ = worker.worker().index() % endpoints_.size();
}

UpstreamPool::~UpstreamPool() = default;

void UpstreamPool::update(std::shared_ptr<const ClusterSnapshot> next) {
  // New connection settings: every endpoint starts over (new objects, new connections), as if
  // the old pool were drained and a new one built.
  const bool new_settings = !snapshot_ || next->settings != snapshot_->settings;
  std::vector<EndpointPtr> old = std::move(endpoints_);
  endpoints_.clear();
  for (const EndpointAddress& a : next->addresses) {
    EndpointPtr ep;
    if (!new_settings) {
      auto it = std::find_if(old.begin(), old.end(),
                             [&](const EndpointPtr& e) { return e && e->address == a.address; });
      if (it != old.end()) ep = std::move(*it);  // the slot is left empty: not retired below
    }
    if (!ep) {
      ep = std::make_shared<UpstreamEndpoint>();
      ep->address = a.address;
      ep->label = address_label(a.address);
    }
    ep->host = a.host;
    ep->healthy = a.healthy;
    endpoints_.push_back(std::move(ep));
  }
  snapshot_ = std::move(next);
  removed_.clear();
  next_endpoint_ = endpoints_.empty() ? 0 : next_endpoint_ % endpoints_.size();
  // After endpoints_ is the new set: streams waiting on a retired connection go to it.
  for (const EndpointPtr& ep : old) {
    if (ep) retire(ep, new_settings ? "cluster settings changed" : "address removed");
  }
}

void UpstreamPool::retire_all(const std::string& why) {
  std::vector<EndpointPtr> old = std::move(endpoints_);
  endpoints_.clear();
  removed_ = why;
  for (const EndpointPtr& ep : old) retire(ep, "cluster removed");
}

void UpstreamPool::retire(const EndpointPtr& endpoint, const char* why) {
  endpoint->retired = true;
  auto conns = connections_;  // retiring may close and erase connections
  for (auto& c : conns) {
    if (&c->endpoint() == endpoint.get()) c->retire_from_pool(why);
  }
}

UpstreamConnection* UpstreamPool::pick(const UpstreamEndpoint& endpoint,
                                       const UpstreamLink* avoid) {
  // The oldest ready connection with room, else the oldest connecting one: calls are packed on
  // as few connections as the peer's stream limit allows (like Envoy's HTTP/2 pool), so one
  // socket write carries many calls and a connection opened for a burst can go idle.
  UpstreamConnection* connecting = nullptr;
  for (auto& c : connections_) {
    if (&c->endpoint() != &endpoint || !c->has_capacity()) continue;
    if (static_cast<const UpstreamLink*>(c.get()) == avoid) continue;
    if (c->state() == UpstreamConnection::State::Ready) return c.get();
    if (connecting == nullptr) connecting = c.get();
  }
  return connecting;
}

UpstreamConnection* UpstreamPool::open_connection(std::size_t idx) {
  auto conn = std::make_shared<UpstreamConnection>(*this, endpoints_[idx], snapshot_->settings);
  connections_.push_back(conn);
  stats_.upstream_cx_total.inc();
  conn->connect();
  return conn.get();
}

bool UpstreamPool::assign_to(std::size_t idx, UpstreamClient& client, const UpstreamLink* avoid) {
  const std::size_t n = endpoints_.size();
  const UpstreamEndpoint& ep = *endpoints_[idx];
  if (UpstreamConnection* conn = pick(ep, avoid)) {
    next_endpoint_ = (idx + 1) % n;
    conn->add_stream(client);
    return true;
  }
  if (ep.consecutive_failures > 0 && LoopTime::now() < ep.retry_at) return false;  // in backoff
  std::size_t open = 0;
  UpstreamConnection* least = nullptr;
  for (auto& c : connections_) {
    if (&c->endpoint() != &ep) continue;
    const auto st = c->state();
    if (st != UpstreamConnection::State::Ready && st != UpstreamConnection::State::Connecting)
      continue;
    ++open;
    if (least == nullptr || c->load() < least->load()) least = c.get();
  }
  next_endpoint_ = (idx + 1) % n;
  if (open >= snapshot_->config->max_connections_per_endpoint && least != nullptr) {
    least->add_stream(client);  // every connection is full: nghttp2 queues the stream
    return true;
  }
  open_connection(idx)->add_stream(client);
  return true;
}

void UpstreamPool::probe(std::size_t idx, TimePoint now) {
  const UpstreamEndpoint& ep = *endpoints_[idx];
  if (now < ep.retry_at) return;
  for (auto& c : connections_) {
    if (&c->endpoint() == &ep && c->state() == UpstreamConnection::State::Connecting) return;
  }
  open_connection(idx);
}

void UpstreamPool::assign(UpstreamClient& client, const UpstreamLink* avoid) {
  const std::size_t n = endpoints_.size();
  const TimePoint now = LoopTime::now();
  // Active health: only healthy addresses while there is one; none healthy: all of them
  // (panic routing: a broken health service must not become an outage of a working one).
  std::size_t healthy = 0;
  for (const EndpointPtr& ep : endpoints_) healthy += ep->healthy ? 1 : 0;
  const bool panic = healthy == 0;
  if (panic && n > 0) stats_.upstream_rq_panic_total.inc();
  const std::size_t eligible = panic ? n : healthy;
  // Passive: endpoints without failures first, in round-robin order; then the failing ones out
  // of backoff (the stream waits for their new connection), so a frozen or restarting endpoint
  // costs a caller a wait only when nothing else can serve it.
  const std::size_t first = next_endpoint_;
  for (const bool working : {true, false}) {
    for (std::size_t attempt = 0; attempt < n; ++attempt) {
      const std::size_t idx = (first + attempt) % n;
      const UpstreamEndpoint& ep = *endpoints_[idx];
      if (!panic && !ep.healthy) continue;
      const bool failing = ep.consecutive_failures > 0;
      if (working && failing) {
        if (eligible > 1) probe(idx, now);
        continue;
      }
      if (!working && !failing) continue;
      if (assign_to(idx, client, avoid)) return;
    }
  }
  fail_unavailable(client, now);
}

void UpstreamPool::fail_unavailable(UpstreamClient& client, TimePoint now) {
  // Nothing to try (no address, or every usable one in backoff): answer now rather than queue.
  stats_.upstream_rq_unavailable_total.inc();
  const std::string cluster = "upstream cluster '" + snapshot_->config->name + "'";
  if (!removed_.empty()) {
    client.on_upstream_unavailable(cluster + " unavailable: " + removed_);
    return;
  }
  if (endpoints_.empty()) {
    client.on_upstream_unavailable(cluster + " has no address: " + snapshot_->no_address_reason);
    return;
  }
  std::string why;
  for (const EndpointPtr& ep : endpoints_) {
    if (!why.empty()) why += "; ";
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(ep->retry_at - now);
    why += ep->label + ": " + ep->last_error + " (next attempt in " +
           std::to_string(std::max<int64_t>(0, wait.count())) + "ms)";
  }
  client.on_upstream_unavailable(cluster + " unavailable: " + why);
}

Duration UpstreamPool::backoff(uint32_t failures) {
  const ClusterConfig& config = *snapshot_->config;
  Duration d = config.reconnect_backoff_base;
  for (uint32_t i = 1; i < failures && d < config.reconnect_backoff_max; ++i) d *= 2;
  d = std::min(d, config.reconnect_backoff_max);
  // +-20% jitter so workers and sidecars do not retry in lockstep.
  jitter_state_ ^= jitter_state_ << 13;
  jitter_state_ ^= jitter_state_ >> 7;
  jitter_state_ ^= jitter_state_ << 17;
  const double f = 0.8 + 0.4 * static_cast<double>(jitter_state_ % 1000) / 1000.0;
  return std::chrono::duration_cast<Duration>(d * f);
}

void UpstreamPool::on_connect_result(UpstreamConnection& conn, bool ok, const std::string& error) {
  UpstreamEndpoint& ep = conn.endpoint();
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
