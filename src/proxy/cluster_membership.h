// The addresses of one cluster and their health, kept on the main thread (one per cluster, not
// one per worker): endpoint names are resolved to all their addresses and re-resolved every
// dns_refresh, every address is health checked when the cluster has health_check, and each
// change is published as a ClusterSnapshot that the server posts to every worker's pool.
//
// A resolution that fails keeps the name's last good addresses (Envoy's STRICT_DNS) and is
// retried after 1 s, doubling up to dns_refresh. Literal addresses are never resolved.
//
// Everything runs on the dispatcher's thread, except readiness(), which any thread may call.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/config/config.h"
#include "src/core/dispatcher.h"
#include "src/proxy/cluster_snapshot.h"
#include "src/proxy/health_prober.h"
#include "src/proxy/health_state.h"
#include "src/proxy/name_resolver.h"

namespace sluice {

struct ClusterStats;

class ClusterMembership {
 public:
  using Publish = std::function<void(std::shared_ptr<const ClusterSnapshot>)>;

  // The first retry after a failed resolution; it doubles up to dns_refresh.
  static constexpr Duration kFirstResolveRetry = std::chrono::seconds(1);

  ClusterMembership(Dispatcher& loop, NameResolver& resolver, HealthProberFactory probers,
                    ClusterStats& stats, Publish publish);
  ~ClusterMembership();
  ClusterMembership(const ClusterMembership&) = delete;
  ClusterMembership& operator=(const ClusterMembership&) = delete;

  // Starts the cluster (first call) or changes it (a reload): names that stay keep their
  // addresses, new names are resolved now, addresses that stay keep their health. `settings`
  // is a new object when connections must be made anew (see UpstreamSettings). Publishes.
  void configure(std::shared_ptr<const ClusterConfig> config,
                 std::shared_ptr<const UpstreamSettings> settings);
  // Stops resolving and checking, and forgets every address (the cluster was removed).
  void stop();

  // Names whose first resolution has not ended yet.
  std::size_t unresolved() const;
  // What was last published (nullptr before configure()).
  std::shared_ptr<const ClusterSnapshot> current() const { return published_; }

  // For /ready: how many addresses there are and how many get calls; `detail` says why none
  // does (each address's last failure, or why there is no address). Any thread.
  struct Readiness {
    std::size_t addresses = 0;
    std::size_t healthy = 0;
    std::string detail;
  };
  Readiness readiness() const;

 private:
  // One configured endpoint: a literal address, or a name and what it last resolved to.
  struct Name {
    SocketAddress configured;
    bool literal = false;
    std::vector<boost::asio::ip::tcp::endpoint> addresses;
    bool resolved = false;   // a resolution ended, well or not (literals: always)
    std::string last_error;  // of the last resolution, "" when it succeeded
    Duration retry_after = kFirstResolveRetry;
    std::unique_ptr<Timer> timer;  // the next resolution (names only)
  };
  // One address of the cluster (the union of every name's addresses, each once).
  struct Address {
    Address(boost::asio::ip::tcp::endpoint a, std::string h, const HealthCheckConfig& hc)
        : address(std::move(a)),
          host(std::move(h)),
          health(hc.healthy_threshold, hc.unhealthy_threshold) {}
    boost::asio::ip::tcp::endpoint address;
    std::string host;
    HealthState health;
    std::string last_failure;              // of the last failed check
    std::unique_ptr<Timer> timer;          // the next check
    std::unique_ptr<HealthProber> prober;  // after timer: destroyed first, so no late callback
  };

  void resolve(const std::shared_ptr<Name>& name);
  void on_resolved(Name& name, NameResolver::Result result);
  // Makes addresses_ the union of the names' addresses; true when it changed.
  bool rebuild_addresses();
  // (Re)starts health checking of `a` from scratch with the current config: a new prober and a
  // check now. Without health_check: no prober, and the address counts as healthy.
  void restart_checks(Address& a);
  void check(Address& a);
  void on_checked(Address& a, const HealthCheckOutcome& outcome);
  bool address_healthy(const Address& a) const;
  std::string no_address_reason() const;
  // Publishes a snapshot of the current state when it differs from the last one; keeps the
  // gauges and the readiness summary in step.
  void publish();

  Dispatcher& loop_;
  NameResolver& resolver_;
  HealthProberFactory probers_;
  ClusterStats& stats_;
  Publish publish_;
  std::shared_ptr<const ClusterConfig> config_;
  std::shared_ptr<const UpstreamSettings> settings_;
  std::vector<std::shared_ptr<Name>> names_;  // shared: a pending lookup holds a weak_ptr
  std::vector<std::unique_ptr<Address>> addresses_;
  std::shared_ptr<const ClusterSnapshot> published_;

  mutable std::mutex readiness_mu_;
  Readiness readiness_;
};

}  // namespace sluice
