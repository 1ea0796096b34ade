#include "src/proxy/listener_context.h"

#include "filters/filter_chain.h"

namespace sluice {

ListenerContext::ListenerContext(std::string listener_name, StatsRegistry& registry,
                                 std::shared_ptr<const ListenerSnapshot> snapshot)
    : name(std::move(listener_name)), stats(registry, name) {
  publish(std::move(snapshot));
}

ListenerContext::~ListenerContext() = default;

std::shared_ptr<const ListenerSnapshot> make_listener_snapshot(
    const ListenerConfig& cfg, UpstreamTarget upstream, std::shared_ptr<const FilterChain> chain,
    std::shared_ptr<boost::asio::ssl::context> tls, std::shared_ptr<AccessLog> access_log) {
  return std::make_shared<const ListenerSnapshot>(
      ListenerSnapshot{std::move(chain), cfg.criticality, std::move(access_log),
                       std::make_shared<const ConnectionSettings>(
                           ConnectionSettings{cfg.http2, cfg.limits, std::move(tls)}),
                       std::move(upstream)});
}

}  // namespace sluice
