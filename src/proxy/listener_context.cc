#include "src/proxy/listener_context.h"

#include "filters/filter_chain.h"

namespace sluice {

ListenerContext::ListenerContext(const ListenerConfig& cfg, std::size_t cluster,
                                 StatsRegistry& registry,
                                 std::shared_ptr<const FilterChain> filter_chain,
                                 std::shared_ptr<boost::asio::ssl::context> tls_context)
    : config(cfg), cluster_index(cluster), stats(registry, cfg.name), tls(std::move(tls_context)) {
  publish(std::make_shared<const ListenerSnapshot>(ListenerSnapshot{
      std::move(filter_chain), cfg.criticality, nullptr,
      std::make_shared<const ConnectionSettings>(ConnectionSettings{cfg.http2, cfg.limits})}));
}

ListenerContext::~ListenerContext() = default;

}  // namespace sluice
