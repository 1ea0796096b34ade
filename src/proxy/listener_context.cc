#include "src/proxy/listener_context.h"

#include "filters/filter_chain.h"

namespace sluice {

ListenerContext::ListenerContext(const ListenerConfig& cfg, std::size_t cluster,
                                 StatsRegistry& registry, std::unique_ptr<FilterChain> filter_chain,
                                 std::shared_ptr<boost::asio::ssl::context> tls_context)
    : config(cfg),
      cluster_index(cluster),
      stats(registry, cfg.name),
      chain(std::move(filter_chain)),
      tls(std::move(tls_context)) {}

ListenerContext::~ListenerContext() = default;

}  // namespace sluice
