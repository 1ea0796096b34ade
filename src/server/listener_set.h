// The listeners the server serves, each bound on every worker (SO_REUSEPORT: every worker binds
// the same address and the kernel spreads connections), and the ones a reload removed or moved
// away, whose connections drain. Binding is apart from serving so that a reload binds every new
// socket first and changes nothing when one cannot be bound.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/config/config.h"
#include "src/core/time.h"

namespace sluice {

class DownstreamConnection;
class TcpListener;
class WorkerContext;
struct ListenerContext;

class ListenerSet {
 public:
  // A listener bound on every worker, not accepting yet. Dropping it closes its sockets.
  struct Bound {
    std::string name;
    SocketAddress address;  // as configured
    uint16_t port = 0;      // as bound: the ephemeral port the kernel chose for port 0
    std::vector<std::shared_ptr<TcpListener>> acceptors;  // one per worker, in worker order
    // The listener's context, given by serve(): a listener that could not be bound leaves
    // nothing behind, not even its stats. The acceptors hand it to each connection.
    std::shared_ptr<std::shared_ptr<ListenerContext>> context;
  };

  // `workers` must outlive the set. Drains are paced by a timer on `main_io` (the server's
  // thread for signals and drain).
  ListenerSet(std::vector<WorkerContext*> workers, boost::asio::io_context& main_io);
  ~ListenerSet();
  ListenerSet(const ListenerSet&) = delete;
  ListenerSet& operator=(const ListenerSet&) = delete;

  // Binds listener `name` at `endpoint` (`address` resolved) on every worker. Throws
  // std::runtime_error naming the listener and the address (nothing stays bound) when the
  // address is in use or not allowed. Any thread; the set itself does not change.
  Bound bind(std::string name, const SocketAddress& address,
             boost::asio::ip::tcp::endpoint endpoint) const;
  // Starts serving `bound` with `context` (of the same name). A listener of that name already
  // served (moved to a new address) is retired as retire() does, once the new one is accepting.
  // The workers accept on the new sockets as soon as they get to it (the sockets already listen:
  // clients queue in the backlog). Before the workers run (startup), or with them running.
  void serve(Bound bound, std::shared_ptr<ListenerContext> context, Duration drain_timeout);
  // Stops serving listener `name` (removed by a reload): its sockets close on every worker before
  // this returns, then its connections drain as at shutdown: GOAWAY(2^31-1) now, the real GOAWAY
  // about a second later, streams still open after `drain_timeout` are ended (UNAVAILABLE or
  // reset, counted as drained) and the connections closed a second after that. Workers running.
  void retire(const std::string& name, Duration drain_timeout);

  // The listeners served now.
  std::vector<std::shared_ptr<ListenerContext>> contexts() const;
  std::shared_ptr<ListenerContext> find(const std::string& name) const;
  // Bound port by listener name.
  std::map<std::string, uint16_t> ports() const;
  // Listeners retired and still draining (connections open).
  std::size_t draining() const;

  // Drain (shutdown or POST /drain): every served listener stops accepting (on its worker's
  // thread; waits for them), and listeners served later close their sockets at once.
  void stop_accepting();
  // Shutdown: no more drain steps (before the workers stop).
  void stop_draining();

 private:
  struct Retiring {
    std::shared_ptr<ListenerContext> context;  // kept until drained: the connections hold it too
    std::string why;                           // "removed", "moved to 127.0.0.1:9000"
    TimePoint since;
    Duration timeout;
    bool goaway_sent = false;
    bool terminated = false;
  };

  std::shared_ptr<TcpListener> make_acceptor(
      WorkerContext& worker, const std::shared_ptr<std::shared_ptr<ListenerContext>>& slot) const;
  // Stops `bound`'s acceptors, marks its context draining and sends the first GOAWAY on its
  // connections (on every worker's thread; waits), then drains it from the main thread.
  void begin_retire(Bound bound, std::string why, Duration drain_timeout);
  // Main thread: the next step of every drain, until none is left.
  void drain_tick();
  // Runs `fn` for every connection of `context` on every worker's thread; does not wait.
  void post_to_connections(const std::shared_ptr<ListenerContext>& context,
                           const std::function<void(DownstreamConnection&)>& fn) const;
  // Runs `fn(worker index)` on every worker's thread and waits for all of them.
  void on_each_worker(const std::function<void(std::size_t)>& fn) const;

  const std::vector<WorkerContext*> workers_;
  boost::asio::io_context& main_io_;
  boost::asio::steady_timer drain_timer_;  // main thread
  bool ticking_ = false;                   // main thread
  bool stopped_ = false;                   // main thread
  mutable std::mutex mu_;                  // served_, retiring_, accepting_
  std::map<std::string, Bound> served_;
  std::vector<Retiring> retiring_;
  bool accepting_ = true;  // false once stop_accepting() ran (shutdown or POST /drain)
};

}  // namespace sluice
