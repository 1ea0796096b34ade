#include "src/server/cluster_set.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <limits>

#include "src/proxy/cluster_stats.h"
#include "src/proxy/grpc_health_prober.h"
#include "src/proxy/tls_context.h"
#include "src/proxy/upstream_pool.h"
#include "src/proxy/worker_context.h"

namespace sluice {

namespace asio = boost::asio;

struct ClusterSet::Prepared {
  struct Entry {
    std::shared_ptr<const ClusterConfig> config;
    std::shared_ptr<const UpstreamSettings> settings;
  };
  std::vector<Entry> clusters;  // every cluster of the new configuration
};

namespace {

std::shared_ptr<const UpstreamSettings> make_settings(std::shared_ptr<const ClusterConfig> c) {
  auto tls = c->tls ? make_client_tls_context(*c->tls) : nullptr;
  return std::make_shared<const UpstreamSettings>(UpstreamSettings{std::move(c), std::move(tls)});
}

}  // namespace

ClusterSet::ClusterSet(StatsRegistry& stats, asio::io_context& main_io)
    : stats_(stats),
      main_io_(main_io),
      // Not a worker: the index only names the loop in filter code, which never runs here.
      loop_(main_io, std::numeric_limits<uint32_t>::max()),
      resolver_(main_io) {}

ClusterSet::~ClusterSet() { stop(); }

ClusterSet::Slot& ClusterSet::make_slot(const std::string& name) {
  auto slot = std::make_unique<Slot>();
  slot->name = name;
  slot->stats = std::make_unique<ClusterStats>(stats_, name);
  const std::size_t index = slots_.size();
  slot->membership = std::make_unique<ClusterMembership>(
      loop_, resolver_, GrpcHealthProber::factory(main_io_), *slot->stats,
      [this, index](const std::shared_ptr<const ClusterSnapshot>& s) { publish(index, s); });
  std::lock_guard lock(slots_mu_);
  slots_.push_back(std::move(slot));
  return *slots_.back();
}

void ClusterSet::build(const std::vector<ClusterConfig>& clusters) {
  for (const ClusterConfig& c : clusters) {
    Slot& slot = make_slot(c.name);
    slot.config = std::make_shared<const ClusterConfig>(c);
    slot.settings = make_settings(slot.config);
    slot.membership->configure(slot.config, slot.settings);
  }
}

std::size_t ClusterSet::unresolved() const {
  std::size_t n = 0;
  for (const auto& s : slots_) n += s->membership->unresolved();
  return n;
}

void ClusterSet::wait_for_names() {
  if (unresolved() == 0) return;
  const auto guard = asio::make_work_guard(main_io_);  // run_one_until must not run out of work
  const auto deadline = SteadyClock::now() + kStartupResolveWait;
  while (unresolved() > 0 && SteadyClock::now() < deadline) main_io_.run_one_until(deadline);
  if (const std::size_t n = unresolved(); n > 0) {
    spdlog::warn(
        "{} endpoint name(s) not resolved after {} s; starting anyway (calls to a "
        "cluster without an address get UNAVAILABLE until they resolve)",
        n, to_us(kStartupResolveWait) / 1'000'000);
  }
}

void ClusterSet::add_pools(WorkerContext& worker) {
  workers_.push_back(&worker);
  for (auto& s : slots_) {
    worker.add_pool(std::make_unique<UpstreamPool>(worker, *s->stats, s->membership->current()));
    s->pools_added = true;
  }
}

std::optional<std::size_t> ClusterSet::index(const std::string& name) const {
  std::lock_guard lock(slots_mu_);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i]->name == name) return i;
  }
  return std::nullopt;
}

ClusterSet::Slot* ClusterSet::find(const std::string& name) const {
  for (const auto& s : slots_) {
    if (s->name == name) return s.get();
  }
  return nullptr;
}

void ClusterSet::publish(std::size_t index,
                         const std::shared_ptr<const ClusterSnapshot>& snapshot) {
  if (!slots_[index]->pools_added) return;  // the pools are made from current() when added
  for (WorkerContext* w : workers_) {
    asio::post(w->io(), [w, index, snapshot] { w->pool(index).update(snapshot); });
  }
}

std::shared_ptr<ClusterSet::Prepared> ClusterSet::prepare(const std::vector<ClusterConfig>& next) {
  auto p = std::make_shared<Prepared>();
  for (const ClusterConfig& c : next) {
    auto config = std::make_shared<const ClusterConfig>(c);
    const Slot* slot = find(c.name);
    std::shared_ptr<const UpstreamSettings> settings;
    if (slot != nullptr && slot->config && same_connection_settings(*slot->settings->config, c)) {
      settings = slot->settings;  // the connections stay
    } else {
      settings = make_settings(config);  // may throw: nothing has changed yet
    }
    p->clusters.push_back({std::move(config), std::move(settings)});
  }
  return p;
}

void ClusterSet::commit(const std::shared_ptr<Prepared>& prepared) {
  std::vector<Slot*> kept;
  for (const Prepared::Entry& e : prepared->clusters) {
    Slot* slot = find(e.config->name);
    const bool is_new = slot == nullptr;
    if (is_new) slot = &make_slot(e.config->name);
    kept.push_back(slot);
    const bool unchanged = slot->config && *slot->config == *e.config;
    if (unchanged) continue;
    if (slot->config == nullptr && !is_new) {
      spdlog::info("cluster '{}': back after a reload", slot->name);
    }
    slot->config = e.config;
    slot->settings = e.settings;
    slot->membership->configure(slot->config, slot->settings);
    if (!slot->pools_added) {
      // A new slot: every worker gets its pool before any later snapshot (posting order).
      const std::size_t index =
          static_cast<std::size_t>(std::find_if(slots_.begin(), slots_.end(),
                                                [&](const auto& s) { return s.get() == slot; }) -
                                   slots_.begin());
      auto snapshot = slot->membership->current();
      ClusterStats* stats = slot->stats.get();
      for (WorkerContext* w : workers_) {
        asio::post(w->io(), [w, index, stats, snapshot] {
          // Pools are added in slot order on every worker, so the index matches.
          if (w->pool_count() == index) {
            w->add_pool(std::make_unique<UpstreamPool>(*w, *stats, snapshot));
          }
        });
      }
      slot->pools_added = true;
    }
  }
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = *slots_[i];
    if (!slot.config || std::find(kept.begin(), kept.end(), &slot) != kept.end()) continue;
    spdlog::info("cluster '{}': removed; its connections drain", slot.name);
    slot.config = nullptr;
    slot.membership->stop();
    const std::string why = "cluster '" + slot.name + "' was removed by a reload";
    for (WorkerContext* w : workers_) {
      asio::post(w->io(), [w, i, why] { w->pool(i).retire_all(why); });
    }
  }
}

std::vector<std::string> ClusterSet::unready_reasons(
    const std::vector<std::pair<std::string, std::string>>& routes) const {
  std::vector<std::pair<std::string, std::vector<std::string>>> clusters;  // its listeners
  for (const auto& route : routes) {
    const std::string& cluster = route.second;
    auto it = std::find_if(clusters.begin(), clusters.end(),
                           [&](const auto& c) { return c.first == cluster; });
    if (it == clusters.end()) it = clusters.insert(clusters.end(), {cluster, {}});
    it->second.push_back(route.first);
  }
  std::vector<std::string> out;
  std::lock_guard lock(slots_mu_);
  for (const auto& [cluster, listeners] : clusters) {
    const Slot* slot = find(cluster);
    if (slot == nullptr) continue;
    const ClusterMembership::Readiness r = slot->membership->readiness();
    if (r.healthy > 0) continue;
    std::string line = "NO_HEALTHY_UPSTREAM cluster ";
    line += cluster;
    line += listeners.size() == 1 ? " (listener " : " (listeners ";
    for (std::size_t i = 0; i < listeners.size(); ++i) line += (i > 0 ? ", " : "") + listeners[i];
    line += "): ";
    line += std::to_string(r.healthy) + " of " + std::to_string(r.addresses);
    line += " addresses healthy: " + r.detail;
    out.push_back(std::move(line));
  }
  return out;
}

void ClusterSet::stop() {
  for (auto& s : slots_) s->membership->stop();
}

}  // namespace sluice
