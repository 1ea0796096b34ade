#include "src/server/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <fstream>
#include <future>
#include <sstream>
#include <stdexcept>

#include "filters/chain_rebuild.h"
#include "filters/filter_chain.h"
#include "filters/filter_registry.h"
#include "src/admin/admin_server.h"
#include "src/admin/process_stats.h"
#include "src/config/config_dump.h"
#include "src/config/config_loader.h"
#include "src/core/tcp_listener.h"
#include "src/core/worker.h"
#include "src/proxy/access_log.h"
#include "src/proxy/cluster_stats.h"
#include "src/proxy/downstream_connection.h"
#include "src/proxy/listener_context.h"
#include "src/proxy/tls_context.h"
#include "src/proxy/upstream_pool.h"
#include "src/server/cluster_set.h"
#include "src/server/listener_plan.h"
#include "src/server/queue_mode.h"

namespace sluice {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct Server::WorkerSlot {
  std::unique_ptr<Worker> worker;
  std::unique_ptr<WorkerContext> context;
};

namespace {

std::vector<tcp::endpoint> resolve(const SocketAddress& a, const std::string& what) {
  asio::io_context io;
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto results =
      resolver.resolve(a.host, std::to_string(a.port), tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    throw std::runtime_error("cannot resolve " + what + " " + a.to_string() + ": " +
                             (ec ? ec.message() : std::string("no addresses")));
  }
  std::vector<tcp::endpoint> out;
  for (const auto& r : results) out.push_back(r.endpoint());
  return out;
}

}  // namespace

Server::Server(Config config)
    : config_(std::move(config)),
      running_(config_),
      loaded_at_(std::chrono::system_clock::now()),
      started_(SteadyClock::now()),
      started_wall_(loaded_at_) {
  reload_total_ = &stats_.counter(StatName{"server", {}, "config_reload_total"},
                                  "Reloads of the configuration file that were applied");
  reload_failed_total_ =
      &stats_.counter(StatName{"server", {}, "config_reload_failed_total"},
                      "Reloads refused: an invalid file, or a change that needs a restart");
}

Server::~Server() {
  if (admin_) admin_->stop();
  for (auto& w : workers_) w->worker->stop();
  // Listening sockets, then connections and pools, after every thread has stopped: sockets go
  // before the io_contexts they are registered with.
  listener_set_.reset();
  workers_.clear();
}

template <class F>
void Server::on_each_worker(F fn) {
  std::vector<std::future<void>> done;
  for (auto& slot : workers_) {
    auto task = std::make_shared<std::packaged_task<void()>>([&fn, s = slot.get()] { fn(*s); });
    done.push_back(task->get_future());
    asio::post(slot->worker->io(), [task] { (*task)(); });
  }
  for (auto& f : done) f.get();
}

void Server::start() {
  register_process_stats(stats_, started_);
  queue_mode_ = std::make_unique<QueueMode>(config_, stats_);
  build_clusters();
  open_access_log();
  build_workers();
  bind_listeners();
  start_admin();
  start_serving();
}

void Server::build_clusters() {
  clusters_ = std::make_unique<ClusterSet>(stats_, main_io_);
  clusters_->build(config_.clusters);
  // Like Envoy's cluster warming: listeners open once every name had its first answer (or a
  // few seconds passed), so the first calls do not fail for want of an address.
  clusters_->wait_for_names();
}

void Server::open_access_log() {
  if (!config_.admin.access_log.enabled) return;
  access_log_ =
      std::make_shared<AccessLog>(config_.admin.access_log, AccessLog::kDefaultCapacity, &stats_);
}

void Server::build_workers() {
  for (uint32_t i = 0; i < config_.workers; ++i) {
    auto slot = std::make_unique<WorkerSlot>();
    slot->worker = std::make_unique<Worker>(i);
    slot->context = std::make_unique<WorkerContext>(*slot->worker, drain_tracker_);
    clusters_->add_pools(*slot->context);
    queue_mode_->add_frontends(*slot->context, i);
    workers_.push_back(std::move(slot));
  }
  // Consumers run on the first worker, with its cluster pools.
  queue_mode_->add_consumers(*workers_.front()->context, drain_tracker_, stats_);
  std::vector<WorkerContext*> contexts;
  for (auto& slot : workers_) contexts.push_back(slot->context.get());
  listener_set_ = std::make_unique<ListenerSet>(std::move(contexts), main_io_);
}

void Server::bind_listeners() {
  // Bind every listener on every worker before serving anything: a failure aborts start.
  std::vector<ListenerSet::Bound> bound;
  for (const ListenerConfig& l : config_.listeners) bound.push_back(bind_listener(l));
  for (std::size_t i = 0; i < bound.size(); ++i) {
    const ListenerConfig& l = config_.listeners[i];
    std::shared_ptr<const FilterChain> chain;
    if (!l.filters.empty()) {
      chain = make_filter_chain(l.filters, l.name, stats_, RealClock::instance());
    }
    std::shared_ptr<asio::ssl::context> tls;
    if (l.tls) {
      ServerTlsFiles files = read_server_tls_files(*l.tls);
      tls = make_server_tls_context(*l.tls, files);
      listener_tls_[l.name] = std::move(files);
    }
    auto context = std::make_shared<ListenerContext>(
        l.name, stats_,
        make_listener_snapshot(l, upstream_target(l), std::move(chain), std::move(tls),
                               access_log_));
    listener_set_->serve(std::move(bound[i]), std::move(context), config_.drain_timeout);
  }
  tls_loaded_version_ = tls_version(listener_tls_);
}

ListenerSet::Bound Server::bind_listener(const ListenerConfig& l) const {
  const tcp::endpoint ep = resolve(l.address, "listener '" + l.name + "'").front();
  return listener_set_->bind(l.name, l.address, ep);
}

UpstreamTarget Server::upstream_target(const ListenerConfig& l) const {
  return UpstreamTarget{l.cluster, queue_mode_->queue_index(l)};
}

void Server::start_admin() {
  // SIGHUP is caught from here on, so that a SIGHUP once the ready file is written reloads
  // rather than kills (run() waits for it).
  signals_.add(SIGHUP);
  watch_seen_version_ = config_.version;
  watch_tls_seen_ = tls_loaded_version_;
  watch_tick();  // arms the timer; it checks whether watching is on at every tick
  admin_ = std::make_unique<AdminServer>(config_.admin, stats_, *this);
  admin_->start();
}

void Server::start_serving() {
  for (auto& slot : workers_) slot->worker->start();  // each accepts on its listeners first
  for (const auto& [name, port] : listener_set_->ports()) {
    spdlog::info("listener '{}' on port {}", name, port);
  }
  spdlog::info("sluice {} started: {} workers, admin on port {}", SLUICE_VERSION, config_.workers,
               admin_->bound_port());
}

uint16_t Server::listener_port(const std::string& name) const {
  const auto ports = listener_set_->ports();
  auto it = ports.find(name);
  return it == ports.end() ? 0 : it->second;
}

uint16_t Server::admin_port() const { return admin_ ? admin_->bound_port() : 0; }

void Server::write_ready_file(const std::string& path) {
  std::lock_guard lock(reload_mu_);
  ready_file_ = path;
  rewrite_ready_file();
}

void Server::rewrite_ready_file() {
  if (ready_file_.empty()) return;
  const std::string& path = ready_file_;
  boost::json::object listeners;
  for (const auto& [name, port] : listener_set_->ports()) listeners[name] = port;
  boost::json::object o;
  o["admin_port"] = admin_port();
  o["listeners"] = std::move(listeners);
  o["pid"] = static_cast<int64_t>(::getpid());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << boost::json::serialize(o) << "\n";
    if (!f) throw std::runtime_error("cannot write ready file " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("cannot rename ready file to " + path);
  }
}

int Server::run() {
  signals_.add(SIGTERM);
  signals_.add(SIGINT);
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [this, &on_signal](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (sig == SIGHUP) {
          reload("SIGHUP");
          signals_.async_wait(on_signal);
          return;
        }
        if (exit_requested_) {
          spdlog::warn("second signal {}: stopping without waiting", sig);
          finish_drain();
          return;
        }
        spdlog::info("signal {}: draining (timeout {} ms)", sig, to_us(drain_timeout()) / 1000);
        exit_requested_ = true;
        begin_drain();
        signals_.async_wait(on_signal);
      };
  signals_.async_wait(on_signal);
  auto guard = asio::make_work_guard(main_io_);
  main_io_.run();
  return 0;
}

void Server::start_drain() {
  asio::post(main_io_, [this] {
    spdlog::info("drain requested through the admin endpoint");
    begin_drain();
  });
}

void Server::begin_drain() {
  if (!draining_.exchange(true)) {
    drain_started_ = SteadyClock::now();
    // Phase 1: stop accepting; GOAWAY(2^31-1) tells clients to stop opening streams.
    listener_set_->stop_accepting();
    on_each_worker([](WorkerSlot& s) {
      s.context->set_draining();
      for (DownstreamConnection* c : s.context->connections()) c->shutdown_notice();
    });
    queue_mode_->drain_consumers();  // stop reading; the calls in hand hold the drain open
  }
  drain_timer_.cancel();
  drain_tick();
}

Duration Server::drain_timeout() const {
  std::lock_guard lock(config_mu_);
  return running_.drain_timeout;
}

void Server::drain_tick() {
  const Duration elapsed = SteadyClock::now() - drain_started_;
  const Duration timeout = drain_timeout();
  // Phase 2, about one RTT later: the real GOAWAY with the last stream id we will serve.
  const Duration goaway_delay = std::min<Duration>(std::chrono::seconds(1), timeout / 2);
  if (!goaway_sent_ && elapsed >= goaway_delay) {
    goaway_sent_ = true;
    on_each_worker([](WorkerSlot& s) {
      for (DownstreamConnection* c : s.context->connections()) c->goaway();
    });
  }
  if (exit_requested_) {
    const int64_t active = drain_tracker_.active_streams.value();
    if (goaway_sent_ && active == 0) {
      finish_drain();
      return;
    }
    if (elapsed >= timeout) {
      if (!streams_terminated_) {
        streams_terminated_ = true;
        spdlog::warn("drain timeout: ending {} streams still in flight", active);
        on_each_worker([](WorkerSlot& s) {
          for (DownstreamConnection* c : s.context->connections()) {
            c->terminate_streams(EndReason::Drained, "sluice is shutting down (drain timeout)");
          }
        });
      } else if (elapsed >= timeout + std::chrono::seconds(1)) {
        finish_drain();  // the terminated streams had a second to flush
        return;
      }
    }
  } else if (goaway_sent_) {
    return;  // admin drain: listeners closed and GOAWAY sent; keep serving, nothing to wait for
  }
  drain_timer_.expires_after(std::chrono::milliseconds(20));
  drain_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) drain_tick();
  });
}

void Server::watch_tick() {
  bool watching = false;
  std::string running_version;
  std::string tls_loaded;
  std::vector<ListenerConfig> listeners;
  {
    std::lock_guard lock(config_mu_);
    watching = running_.watch_config;
    running_version = running_.version;
    tls_loaded = tls_loaded_version_;
    if (watching) listeners = running_.listeners;
  }
  bool reloaded = false;
  if (watching && !config_.source_path.empty()) {
    // The path is opened anew each time, so a swapped symlink (a ConfigMap update) is followed.
    std::ifstream in(config_.source_path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (in) {
      const std::string version = config_version(text.str());
      if (version == running_version) {
        watch_seen_version_ = version;  // reloaded by SIGHUP or the admin endpoint meanwhile
      } else if (version != watch_seen_version_) {
        watch_seen_version_ = version;  // tried once: a broken file is reported once
        reload("watch");
        reloaded = true;
      }
    }
  }
  if (watching && !reloaded) {
    // Certificates rotated in place (a Secret update, cert-manager): the same file names, new
    // bytes. Also tried once per content.
    const std::string tls = tls_files_version(listeners);
    if (tls == tls_loaded) {
      watch_tls_seen_ = tls;
    } else if (tls != watch_tls_seen_) {
      watch_tls_seen_ = tls;
      reload("watch");
    }
  }
  watch_timer_.expires_after(kWatchInterval);
  watch_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) watch_tick();
  });
}

void Server::finish_drain() {
  main_stopped_.store(true);  // an admin reload waiting for the main thread gives up
  if (clusters_) clusters_->stop();
  drain_timer_.cancel();
  watch_timer_.cancel();
  signals_.cancel();
  listener_set_->stop_draining();
  listener_set_->stop_accepting();
  on_each_worker([](WorkerSlot& s) {
    for (DownstreamConnection* c : s.context->connections())
      c->close_now(CloseReason::Shutdown, "shutdown");
    for (std::size_t i = 0; i < s.context->pool_count(); ++i) s.context->pool(i).close_all();
  });
  if (admin_) admin_->stop();
  for (auto& w : workers_) w->worker->stop();
  spdlog::info("drained; exiting");
  main_io_.stop();
}

std::vector<LimiterSnapshot> Server::limits() const {
  std::vector<LimiterSnapshot> out;
  for (const auto& l : listener_set_->contexts()) {
    const std::shared_ptr<const ListenerSnapshot> current = l->current();
    if (!current->chain) continue;
    for (auto& snap : current->chain->snapshots()) {
      snap.listener = l->name;
      out.push_back(std::move(snap));
    }
  }
  if (queue_mode_) queue_mode_->append_limits(out);  // consumers' limiters
  return out;
}

std::vector<std::string> Server::unready_reasons() const {
  if (!clusters_) return {};
  std::vector<std::pair<std::string, std::string>> routes;  // listener, its cluster
  {
    std::lock_guard lock(config_mu_);
    for (const ListenerConfig& l : running_.listeners) {
      if (!l.cluster.empty()) routes.emplace_back(l.name, l.cluster);
    }
  }
  return clusters_->unready_reasons(routes);
}

boost::json::value Server::config_dump() const {
  std::lock_guard lock(config_mu_);
  return config_to_json(running_);
}

ServerInfo Server::server_info() const {
  ServerInfo info;
  info.version = SLUICE_VERSION;
  info.started = started_;
  info.started_wall = started_wall_;
  info.workers = config_.workers;
  info.config_path = config_.source_path;
  info.listeners = listener_set_->ports();
  std::lock_guard lock(config_mu_);
  info.config.version = running_.version;
  info.config.loaded_at = loaded_at_;
  info.config.last_reload = last_reload_;
  return info;
}

ReloadResult Server::reload(const std::string& trigger) {
  if (!main_io_.get_executor().running_in_this_thread()) {
    // Clusters change on the main thread (their resolvers, checkers and timers live there):
    // reloads from elsewhere (the admin thread) run there too, one at a time.
    auto task = std::make_shared<std::packaged_task<ReloadResult()>>(
        [this, trigger] { return reload(trigger); });
    std::future<ReloadResult> result = task->get_future();
    asio::post(main_io_, [task] { (*task)(); });
    while (result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
      if (main_stopped_.load()) {  // shutting down: the task will never run
        ReloadResult r;
        r.trigger = trigger;
        r.at = std::chrono::system_clock::now();
        r.error = "sluice is shutting down";
        return r;
      }
    }
    return result.get();
  }
  std::lock_guard reload_lock(reload_mu_);
  ReloadResult r;
  r.trigger = trigger;
  r.at = std::chrono::system_clock::now();
  r.version = running_.version;
  if (config_.source_path.empty()) {
    r.error = "the configuration was not loaded from a file: nothing to reload";
    return finish_reload(std::move(r));
  }
  Config next;
  try {
    // The same loader, checks and messages as at startup.
    next = load_config_file(config_.source_path, builtin_filters());
  } catch (const ConfigError& e) {
    r.error = e.what();
    return finish_reload(std::move(r));
  }
  ConfigDiff diff = diff_configs(running_, next);
  if (diff.refused()) {
    r.needs_restart = true;
    r.error = diff.refusal();
    return finish_reload(std::move(r));
  }
  std::vector<std::string> found;
  try {
    found = apply(std::move(next), diff);
  } catch (const std::exception& e) {
    r.error = std::string("cannot apply the configuration (nothing changed): ") + e.what();
    return finish_reload(std::move(r));
  }
  r.ok = true;
  r.version = running_.version;
  r.changes = diff.applied;
  r.changes.insert(r.changes.end(), found.begin(), found.end());
  return finish_reload(std::move(r));
}

std::vector<std::string> Server::apply(Config next, const ConfigDiff& diff) {
  // Step 1, may throw. Clusters first: the TLS contexts of new or changed connection settings
  // are built (nothing changes yet), before any listener socket is bound. Then every listener's
  // new sockets are bound, its filters, TLS context and settings built; a new access log opens
  // its file (the old one flushes and closes once the last request that started under it has
  // ended).
  std::shared_ptr<ClusterSet::Prepared> clusters;
  if (!diff.clusters.empty()) clusters = clusters_->prepare(next.clusters);
  std::vector<std::string> found;
  std::vector<ListenerPlan> plans = plan_listeners(next, diff, found);
  std::shared_ptr<AccessLog> access_log = access_log_;
  if (diff.access_log) {
    access_log.reset();
    if (next.admin.access_log.enabled) {
      access_log =
          std::make_shared<AccessLog>(next.admin.access_log, AccessLog::kDefaultCapacity, &stats_);
    }
  }
  // Step 2: everything that can fail is above this line; from here on nothing throws. Clusters
  // first (a listener's new chain or cluster may send calls there), then the listeners.
  if (clusters) {
    clusters_->commit(clusters);
    // Every worker has taken the new snapshots (posted before this barrier) when the reload
    // answers: a call that starts after the answer uses the new cluster.
    on_each_worker([](WorkerSlot&) {});
  }
  access_log_ = std::move(access_log);
  commit_listeners(plans, next, diff);
  if (diff.log_level && log_level_override_.empty()) {
    spdlog::set_level(spdlog::level::from_str(next.log_level));
  }
  std::lock_guard lock(config_mu_);
  running_ = std::move(next);
  loaded_at_ = std::chrono::system_clock::now();
  tls_loaded_version_ = tls_version(listener_tls_);
  return found;
}

ReloadResult Server::finish_reload(ReloadResult r) {
  if (r.ok) {
    reload_total_->inc();
    std::string changes;
    for (const std::string& c : r.changes) changes += (changes.empty() ? "" : "; ") + c;
    spdlog::info("config reloaded ({}): version {}: {}", r.trigger, r.version,
                 changes.empty() ? "no changes" : changes);
  } else {
    reload_failed_total_->inc();
    spdlog::error("config reload ({}) refused, still running version {}: {}", r.trigger, r.version,
                  r.error);
  }
  std::lock_guard lock(config_mu_);
  last_reload_ = r;
  return r;
}

}  // namespace sluice
