// Server: what a reload does to the listeners, in the two steps of apply(). plan_listeners() may
// throw and changes nothing running: it builds every new filter, TLS context and connection
// settings, and binds every added or moved listener on every worker. commit_listeners() never
// throws: it publishes the new snapshots, serves the new sockets, then retires the old ones.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "filters/chain_rebuild.h"
#include "filters/filter_chain.h"
#include "src/config/config_loader.h"
#include "src/server/listener_plan.h"
#include "src/server/server.h"

namespace sluice {

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

const ListenerConfig* find_listener(const Config& config, const std::string& name) {
  for (const ListenerConfig& l : config.listeners) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

}  // namespace

std::vector<ListenerPlan> Server::plan_listeners(const Config& next, const ConfigDiff& diff,
                                                 std::vector<std::string>& changes) {
  std::vector<ListenerPlan> plans(next.listeners.size());
  // Sockets first: a listener that cannot be bound refuses the reload before anything else is
  // built (not even a filter's stats).
  for (std::size_t i = 0; i < next.listeners.size(); ++i) {
    const ListenerConfig& l = next.listeners[i];
    ListenerPlan& p = plans[i];
    p.config = &l;
    p.running = listener_set_->find(l.name);
    if (!p.running || contains(diff.moved, l.name)) p.bound = bind_listener(l);
  }
  for (std::size_t i = 0; i < next.listeners.size(); ++i) {
    const ListenerConfig& l = next.listeners[i];
    ListenerPlan& p = plans[i];
    const ListenerConfig* before = p.running ? find_listener(running_, l.name) : nullptr;
    if (p.running && before == nullptr) {
      throw std::logic_error("listener '" + l.name + "' runs without a configuration");
    }
    const std::shared_ptr<const ListenerSnapshot> current =
        p.running ? p.running->current() : nullptr;
    if (!p.running) {
      if (!l.filters.empty()) {
        p.chain = make_filter_chain(l.filters, l.name, stats_, RealClock::instance());
      }
    } else if (contains(diff.chains, l.name)) {
      p.rebuild.emplace(current->chain, before->filters, l.filters, l.name, stats_,
                        RealClock::instance());
    } else {
      p.chain = current->chain;
    }
    // TLS: a new context when the block changed, or when the certificate or key files hold other
    // bytes than the running context was built from (rotated in place, as Envoy's SDS would
    // pick up): every reload reads them.
    std::shared_ptr<boost::asio::ssl::context> tls;
    if (l.tls) {
      ServerTlsFiles files = read_server_tls_files(*l.tls);
      const auto loaded = listener_tls_.find(l.name);
      const bool same_block = p.running && before->tls == l.tls;
      if (same_block && loaded != listener_tls_.end() && loaded->second == files) {
        tls = current->connection->tls;
      } else {
        tls = make_server_tls_context(*l.tls, files);
        if (same_block) {
          changes.push_back("listeners[" + std::to_string(i) + "] (\"" + l.name +
                            "\").tls: new certificate or key file content (" + l.tls->cert_file +
                            ")");
        }
        p.tls_files = std::move(files);
      }
    }
    if (!p.running || p.tls_files || contains(diff.connections, l.name)) {
      p.connection =
          std::make_shared<const ConnectionSettings>(ConnectionSettings{l.http2, l.limits, tls});
    } else {
      p.connection = current->connection;
    }
  }
  return plans;
}

void Server::commit_listeners(std::vector<ListenerPlan>& plans, const Config& next,
                              const ConfigDiff& diff) {
  for (ListenerPlan& p : plans) {
    const ListenerConfig& l = *p.config;
    std::shared_ptr<const FilterChain> chain = p.chain;
    if (p.rebuild) {
      chain = p.rebuild->commit();
      std::string kept;
      for (const std::string& k : p.rebuild->kept()) kept += (kept.empty() ? "" : ", ") + k;
      spdlog::info("listener '{}': new filter chain for new calls; state carried over: {}", l.name,
                   kept.empty() ? "none" : kept);
    }
    auto snapshot = std::make_shared<const ListenerSnapshot>(ListenerSnapshot{
        std::move(chain), l.criticality, access_log_, p.connection, upstream_target(l)});
    if (p.tls_files) {
      listener_tls_[l.name] = std::move(*p.tls_files);
    } else if (!l.tls) {
      listener_tls_.erase(l.name);
    }
    if (p.running && contains(diff.upstreams, l.name)) {
      spdlog::info("listener '{}': new calls go to {}", l.name, snapshot->upstream.to_string());
    }
    if (p.running && p.connection != p.running->current()->connection) {
      spdlog::info("listener '{}': new HTTP/2 settings, limits or TLS for new connections", l.name);
    }
    if (!p.bound) {
      p.running->publish(std::move(snapshot));
      continue;
    }
    // Moved: new calls on the connections still open at the old address use the new
    // configuration too, while they drain. The new context's stats are the old ones (by name).
    if (p.running) p.running->publish(snapshot);
    spdlog::info("listener '{}': {} {} (port {})", l.name, p.running ? "moved to" : "added on",
                 l.address.to_string(), p.bound->port);
    listener_set_->serve(std::move(*p.bound),
                         std::make_shared<ListenerContext>(l.name, stats_, std::move(snapshot)),
                         next.drain_timeout);
  }
  for (const std::string& name : diff.removed) {
    listener_set_->retire(name, next.drain_timeout);
    listener_tls_.erase(name);
  }
  if (!diff.added.empty() || !diff.moved.empty() || !diff.removed.empty()) {
    try {
      rewrite_ready_file();
    } catch (const std::exception& e) {
      spdlog::error("listeners changed but the ready file was not rewritten: {}", e.what());
    }
  }
}

std::string Server::tls_version(const std::map<std::string, ServerTlsFiles>& files) {
  if (files.empty()) return "";
  std::string all;
  for (const auto& [name, f] : files) {
    // Lengths first: no two different sets of files concatenate to the same text.
    all += name + '\n' + std::to_string(f.cert.size()) + '\n' + std::to_string(f.key.size()) +
           '\n' + f.cert + f.key;
  }
  return config_version(all);
}

std::string Server::tls_files_version(const std::vector<ListenerConfig>& listeners) {
  std::map<std::string, ServerTlsFiles> files;
  try {
    for (const ListenerConfig& l : listeners) {
      if (l.tls) files[l.name] = read_server_tls_files(*l.tls);
    }
  } catch (const std::exception&) {
    return "unreadable";  // mid-rotation, or gone: the reload it triggers says which
  }
  return tls_version(files);
}

}  // namespace sluice
