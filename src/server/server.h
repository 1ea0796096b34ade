// The running proxy: workers, listeners, upstream pools, the admin server, signals and drain.
// Built from a validated Config; start() binds everything or throws before anything is served.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "src/admin/admin_hooks.h"
#include "src/config/config.h"
#include "src/config/config_diff.h"
#include "src/proxy/listener_context.h"
#include "src/proxy/tls_context.h"
#include "src/proxy/worker_context.h"
#include "src/server/listener_set.h"
#include "src/stats/stats_registry.h"

namespace sluice {

class AccessLog;
class AdminServer;
class QueueMode;
class ClusterSet;
struct ListenerPlan;

class Server final : public AdminHooks {
 public:
  explicit Server(Config config);
  ~Server() override;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Resolves endpoints, binds every listener and the admin port, starts the workers. Throws
  // std::runtime_error with a clear message on failure (nothing is left running).
  void start();
  // Writes {"admin_port": N, "listeners": {"name": port}, "pid": N} atomically to `path`, and
  // again after every reload that adds, removes or moves a listener.
  void write_ready_file(const std::string& path);
  // Serves until SIGTERM/SIGINT, then drains (two-phase GOAWAY, in-flight calls finish up to
  // drain_timeout) and stops. Returns the process exit code.
  int run();

  // Reads the configuration file again and applies it if it is valid and changes only what can
  // change live (see ConfigDiff); otherwise nothing changes. Logged and counted either way.
  // Any thread (it runs on the main thread, waited for); reloads run one at a time. `trigger`
  // names the cause ("SIGHUP", "admin", ...).
  ReloadResult reload(const std::string& trigger);
  // --log-level: wins over the file's log_level at startup and on every reload.
  void set_log_level_override(std::string level) { log_level_override_ = std::move(level); }

  uint16_t listener_port(const std::string& name) const;
  uint16_t admin_port() const;
  StatsRegistry& stats() { return stats_; }

  // AdminHooks
  bool draining() const override { return draining_.load(); }
  std::vector<std::string> unready_reasons() const override;
  void start_drain() override;
  std::vector<LimiterSnapshot> limits() const override;
  boost::json::value config_dump() const override;
  ServerInfo server_info() const override;
  ReloadResult reload_config() override { return reload("admin"); }

 private:
  struct WorkerSlot;

  // The steps of start(), in order (main thread, once).
  void build_clusters();   // cluster stats, upstream TLS contexts, resolved endpoints
  void open_access_log();  // when enabled: the writer, published in every listener's snapshot
  void build_workers();    // the worker threads (not yet running), each with a pool per cluster
  void bind_listeners();   // every listener (chain, TLS) on every worker; throws on a failure
  void start_admin();      // SIGHUP, the config file watch and the admin server
  void start_serving();    // starts accepting and the worker threads
  // Listener `l` bound on every worker (not accepting yet). Throws on a failure to resolve or
  // bind its address, naming the listener and the address.
  ListenerSet::Bound bind_listener(const ListenerConfig& l) const;
  // Where listener `l` sends its calls.
  UpstreamTarget upstream_target(const ListenerConfig& l) const;
  void rewrite_ready_file();  // under reload_mu_, when a ready file was asked for

  void begin_drain();  // main thread
  void drain_tick();   // main thread: waits for streams to finish or the timeout
  void finish_drain();
  Duration drain_timeout() const;
  // watch_config: every kWatchInterval, reloads when the file's bytes hash to a version other
  // than the last one seen, or the listeners' certificate and key files changed (main thread).
  void watch_tick();
  // A hash of the certificate and key bytes of every TLS listener ("" when there is none): of
  // the ones loaded, and of the files of `listeners` as they are on disk now ("unreadable" when
  // one cannot be read).
  static std::string tls_version(const std::map<std::string, ServerTlsFiles>& files);
  static std::string tls_files_version(const std::vector<ListenerConfig>& listeners);
  static constexpr Duration kWatchInterval = std::chrono::seconds(1);
  // Applies `next` (validated, diffed as `diff`, not refused); may throw before it changes
  // anything, never after. Returns the changes found beside the diff (certificate files whose
  // content changed).
  std::vector<std::string> apply(Config next, const ConfigDiff& diff);
  // The listener part of apply(), in its two steps (server_listeners.cc).
  std::vector<ListenerPlan> plan_listeners(const Config& next, const ConfigDiff& diff,
                                           std::vector<std::string>& changes);
  void commit_listeners(std::vector<ListenerPlan>& plans, const Config& next,
                        const ConfigDiff& diff);
  ReloadResult finish_reload(ReloadResult result);
  // Runs `fn(slot)` on every worker's thread and waits for all of them.
  template <class F>
  void on_each_worker(F fn);

  // As started: what the workers, pools and admin server were built from and refer to. Never
  // changes (a reload that would change those parts is refused). Listeners are built from
  // running_.
  const Config config_;
  // The configuration in force: config_ until the first successful reload. Written by reload()
  // under both mutexes; read under config_mu_ (or under reload_mu_).
  Config running_;
  std::chrono::system_clock::time_point loaded_at_;
  std::optional<ReloadResult> last_reload_;
  std::string log_level_override_;
  mutable std::mutex config_mu_;
  std::mutex reload_mu_;
  Counter* reload_total_ = nullptr;
  Counter* reload_failed_total_ = nullptr;
  TimePoint started_;
  std::chrono::system_clock::time_point started_wall_;
  StatsRegistry stats_;
  DrainTracker drain_tracker_;
  std::unique_ptr<QueueMode> queue_mode_;  // before workers_: their frontends use its stats
  std::vector<std::unique_ptr<WorkerSlot>> workers_;
  // The certificate and key bytes each TLS listener's context was built from (reload_mu_).
  std::map<std::string, ServerTlsFiles> listener_tls_;
  std::string tls_loaded_version_;  // tls_files_version() of those bytes (config_mu_)
  std::string watch_tls_seen_;      // main thread
  std::string ready_file_;          // reload_mu_
  // The access log in force (nullptr: off); requests hold the one of their snapshot. Under
  // reload_mu_ once serving.
  std::shared_ptr<AccessLog> access_log_;
  std::unique_ptr<AdminServer> admin_;

  boost::asio::io_context main_io_{1};
  boost::asio::signal_set signals_{main_io_};
  boost::asio::steady_timer drain_timer_{main_io_};
  boost::asio::steady_timer watch_timer_{main_io_};
  // After main_io_: its memberships' timers, lookups and health connections live on it. Built in
  // start() (build_clusters); the workers' pools refer to its stats.
  std::unique_ptr<ClusterSet> clusters_;
  std::string watch_seen_version_;  // main thread
  std::atomic<bool> draining_{false};
  std::atomic<bool> main_stopped_{false};  // finish_drain() ran: main_io_ takes no more work
  bool exit_requested_ = false;
  bool goaway_sent_ = false;
  TimePoint drain_started_{};
  bool streams_terminated_ = false;
  // After main_io_ and before workers_ go: its drain timer runs on main_io_, its sockets on the
  // workers' io_contexts (~Server resets it once the workers have stopped).
  std::unique_ptr<ListenerSet> listener_set_;
};

}  // namespace sluice
