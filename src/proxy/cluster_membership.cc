#include "src/proxy/cluster_membership.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>

#include "src/proxy/address_diff.h"
#include "src/proxy/cluster_stats.h"

namespace sluice {

using tcp = boost::asio::ip::tcp;

namespace {

std::string labels(const std::vector<tcp::endpoint>& list) {
  std::string out;
  for (const tcp::endpoint& e : list) out += (out.empty() ? "" : ", ") + address_label(e);
  return out.empty() ? "none" : out;
}

// A literal IP address as an endpoint; nullopt for a name.
std::optional<tcp::endpoint> literal(const SocketAddress& a) {
  boost::system::error_code ec;
  const auto ip = boost::asio::ip::make_address(a.host, ec);
  if (ec) return std::nullopt;
  return tcp::endpoint(ip, a.port);
}

}  // namespace

ClusterMembership::ClusterMembership(Dispatcher& loop, NameResolver& resolver,
                                     HealthProberFactory probers, ClusterStats& stats,
                                     Publish publish)
    : loop_(loop),
      resolver_(resolver),
      probers_(std::move(probers)),
      stats_(stats),
      publish_(std::move(publish)) {}

ClusterMembership::~ClusterMembership() = default;

void ClusterMembership::configure(std::shared_ptr<const ClusterConfig> config,
                                  std::shared_ptr<const UpstreamSettings> settings) {
  const bool first = config_ == nullptr;
  const bool checked_before = !first && config_->health_check.has_value();
  const bool new_health =
      !first && (config_->health_check != config->health_check || settings_ != settings);
  const bool new_refresh = !first && config_->dns_refresh != config->dns_refresh;
  config_ = std::move(config);
  settings_ = std::move(settings);

  // Names that stay keep what they resolved to; new ones are resolved now.
  std::vector<std::shared_ptr<Name>> names;
  std::vector<std::shared_ptr<Name>> to_resolve;
  for (const SocketAddress& a : config_->endpoints) {
    auto it = std::find_if(names_.begin(), names_.end(),
                           [&](const auto& n) { return n && n->configured == a; });
    if (it != names_.end()) {
      names.push_back(std::move(*it));
      continue;
    }
    auto name = std::make_shared<Name>();
    name->configured = a;
    if (auto ep = literal(a)) {
      name->literal = true;
      name->resolved = true;
      name->addresses = {*ep};
    } else {
      std::weak_ptr<Name> weak = name;
      name->timer = loop_.create_timer([this, weak] {
        if (auto n = weak.lock()) resolve(n);
      });
      to_resolve.push_back(name);
    }
    names.push_back(std::move(name));
  }
  names_ = std::move(names);  // the names left behind go, and their pending lookups are ignored
  if (new_refresh) {
    for (const auto& n : names_) {
      // Waiting for a refresh (not retrying a failure): wait the new period from now.
      if (n->timer && n->timer->armed() && n->last_error.empty()) {
        n->timer->arm(config_->dns_refresh);
      }
    }
  }
  if (new_health) {
    // Addresses that stay: checked anew with the new settings. The verdict carries over unless
    // checking was off until now (then it is stale).
    for (auto& a : addresses_) {
      if (config_->health_check) {
        const HealthCheckConfig& hc = *config_->health_check;
        if (!checked_before) a->health = HealthState(hc.healthy_threshold, hc.unhealthy_threshold);
        a->health.set_thresholds(hc.healthy_threshold, hc.unhealthy_threshold);
      }
      restart_checks(*a);
    }
  }
  rebuild_addresses();  // new addresses start their checks here
  publish();
  for (const auto& n : to_resolve) resolve(n);
}

void ClusterMembership::stop() {
  names_.clear();
  addresses_.clear();
  stats_.endpoints.set(0);
  stats_.endpoints_healthy.set(0);
  stats_.endpoints_unhealthy.set(0);
  std::lock_guard lock(readiness_mu_);
  readiness_ = Readiness{};
}

std::size_t ClusterMembership::unresolved() const {
  return static_cast<std::size_t>(
      std::count_if(names_.begin(), names_.end(), [](const auto& n) { return !n->resolved; }));
}

void ClusterMembership::resolve(const std::shared_ptr<Name>& name) {
  stats_.dns_resolve_total.inc();
  std::weak_ptr<Name> weak = name;
  resolver_.resolve(name->configured.host, name->configured.port,
                    [this, weak](NameResolver::Result r) {
                      // A name removed meanwhile (or the membership gone) is no longer ours.
                      if (auto n = weak.lock()) on_resolved(*n, std::move(r));
                    });
}

void ClusterMembership::on_resolved(Name& name, NameResolver::Result result) {
  name.resolved = true;
  const std::string label = name.configured.to_string();
  if (!result.error.empty()) {
    stats_.dns_resolve_failed_total.inc();
    // Keep the last good addresses: a DNS hiccup must not empty a cluster that works.
    spdlog::warn(
        "cluster '{}': cannot resolve {}: {}; keeping {} address(es) ({}), retrying in {} ms",
        config_->name, label, result.error, name.addresses.size(), labels(name.addresses),
        to_us(name.retry_after) / 1000);
    name.last_error = result.error;
    name.timer->arm(name.retry_after);
    name.retry_after = std::min(name.retry_after * 2, config_->dns_refresh);
    publish();  // the reason a cluster without address gives may have changed
    return;
  }
  name.last_error.clear();
  name.retry_after = kFirstResolveRetry;
  const AddressDiff diff = diff_addresses(name.addresses, result.addresses);
  name.addresses = std::move(result.addresses);
  if (!diff.empty()) {
    spdlog::info("cluster '{}': {} resolves to {} (added: {}; vanished: {})", config_->name, label,
                 labels(name.addresses), labels(diff.added), labels(diff.vanished));
  }
  name.timer->arm(config_->dns_refresh);
  rebuild_addresses();
  publish();
}

bool ClusterMembership::rebuild_addresses() {
  std::vector<tcp::endpoint> all;
  std::vector<const std::string*> hosts;  // the first name that gave each address
  for (const auto& n : names_) {
    for (const tcp::endpoint& e : n->addresses) {
      if (std::find(all.begin(), all.end(), e) != all.end()) continue;
      all.push_back(e);
      hosts.push_back(&n->configured.host);
    }
  }
  std::vector<tcp::endpoint> before;
  for (const auto& a : addresses_) before.push_back(a->address);
  const AddressDiff diff = diff_addresses(before, all);
  if (diff.empty()) return false;
  stats_.endpoints_added_total.inc(diff.added.size());
  stats_.endpoints_removed_total.inc(diff.vanished.size());
  const HealthCheckConfig defaults;
  std::vector<std::unique_ptr<Address>> next;
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto it = std::find_if(addresses_.begin(), addresses_.end(),
                           [&](const auto& a) { return a && a->address == all[i]; });
    if (it != addresses_.end()) {
      next.push_back(std::move(*it));
      continue;
    }
    next.push_back(
        std::make_unique<Address>(all[i], *hosts[i], config_->health_check.value_or(defaults)));
    restart_checks(*next.back());
  }
  addresses_ = std::move(next);  // vanished ones go, with their probers and timers
  return true;
}

void ClusterMembership::restart_checks(Address& a) {
  a.timer.reset();
  a.prober.reset();
  if (!config_->health_check) return;
  a.prober = probers_(EndpointAddress{a.address, a.host, false}, settings_, *config_->health_check);
  a.timer = loop_.create_timer([this, &a] { check(a); });
  check(a);  // a new address is checked at once: it gets no calls until then
}

void ClusterMembership::check(Address& a) {
  a.prober->check([this, &a](const HealthCheckOutcome& outcome) { on_checked(a, outcome); });
}

void ClusterMembership::on_checked(Address& a, const HealthCheckOutcome& outcome) {
  (outcome.serving ? stats_.health_check_success_total : stats_.health_check_failure_total).inc();
  if (!outcome.serving) a.last_failure = outcome.detail;
  const HealthState::Status before = a.health.status();
  if (a.health.record(outcome.serving)) {
    if (a.health.healthy()) {
      spdlog::info("cluster '{}': {} is healthy", config_->name, address_label(a.address));
    } else {
      spdlog::warn("cluster '{}': {} is unhealthy ({}; was {})", config_->name,
                   address_label(a.address), outcome.detail, health_status_name(before));
    }
  }
  // The next check one interval after this one ended, so checks of one address never overlap.
  a.timer->arm(config_->health_check->interval);
  publish();
}

bool ClusterMembership::address_healthy(const Address& a) const {
  return !config_->health_check || a.health.healthy();
}

std::string ClusterMembership::no_address_reason() const {
  std::string out;
  for (const auto& n : names_) {
    if (!n->addresses.empty()) continue;
    std::string why = n->resolved ? "cannot resolve " + n->configured.to_string() + ": " +
                                        n->last_error + " (retrying)"
                                  : n->configured.to_string() + " not resolved yet";
    out += (out.empty() ? "" : "; ") + why;
  }
  return out;
}

void ClusterMembership::publish() {
  auto snap = std::make_shared<ClusterSnapshot>();
  snap->config = config_;
  snap->settings = settings_;
  Readiness r;
  for (const auto& a : addresses_) {
    const bool healthy = address_healthy(*a);
    snap->addresses.push_back(EndpointAddress{a->address, a->host, healthy});
    if (healthy) ++r.healthy;
  }
  r.addresses = snap->addresses.size();
  if (addresses_.empty()) snap->no_address_reason = no_address_reason();
  if (r.addresses == 0) {
    r.detail = "no address: " + snap->no_address_reason;
  } else if (r.healthy == 0) {
    for (const auto& a : addresses_) {
      const std::string why = a->health.status() == HealthState::Status::Unchecked
                                  ? "not checked yet"
                                  : a->last_failure;
      r.detail += (r.detail.empty() ? "" : "; ") + address_label(a->address) + " " + why;
    }
  }
  stats_.endpoints.set(static_cast<int64_t>(r.addresses));
  stats_.endpoints_healthy.set(static_cast<int64_t>(r.healthy));
  stats_.endpoints_unhealthy.set(static_cast<int64_t>(r.addresses - r.healthy));
  {
    std::lock_guard lock(readiness_mu_);
    readiness_ = r;
  }
  if (published_ && published_->config == snap->config && published_->settings == snap->settings &&
      published_->addresses == snap->addresses &&
      published_->no_address_reason == snap->no_address_reason) {
    return;  // a check that changed nothing the pools see
  }
  published_ = snap;
  publish_(std::move(snap));
}

ClusterMembership::Readiness ClusterMembership::readiness() const {
  std::lock_guard lock(readiness_mu_);
  return readiness_;
}

}  // namespace sluice
