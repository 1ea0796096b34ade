#include "src/server/listener_set.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <future>
#include <optional>
#include <stdexcept>

#include "src/core/tcp_listener.h"
#include "src/proxy/downstream_connection.h"
#include "src/proxy/listener_context.h"
#include "src/proxy/worker_context.h"

namespace sluice {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
// How often a drain looks at its connections; its steps are a second apart at the finest.
constexpr Duration kDrainTick = std::chrono::milliseconds(50);
}  // namespace

ListenerSet::ListenerSet(std::vector<WorkerContext*> workers, asio::io_context& main_io)
    : workers_(std::move(workers)), main_io_(main_io), drain_timer_(main_io) {}

ListenerSet::~ListenerSet() = default;

ListenerSet::Bound ListenerSet::bind(std::string name, const SocketAddress& address,
                                     tcp::endpoint endpoint) const {
  Bound bound{
      std::move(name), address, 0, {}, std::make_shared<std::shared_ptr<ListenerContext>>()};
  for (WorkerContext* worker : workers_) {
    auto acceptor = make_acceptor(*worker, bound.context);
    try {
      acceptor->bind(endpoint);
    } catch (const std::exception& e) {
      // `bound` goes with the exception: the sockets bound so far close.
      throw std::runtime_error("listener '" + bound.name + "': " + e.what());
    }
    if (endpoint.port() == 0) endpoint.port(acceptor->local_port());  // later workers share it
    bound.acceptors.push_back(std::move(acceptor));
  }
  bound.port = endpoint.port();
  return bound;
}

std::shared_ptr<TcpListener> ListenerSet::make_acceptor(
    WorkerContext& worker, const std::shared_ptr<std::shared_ptr<ListenerContext>>& slot) const {
  WorkerContext* wctx = &worker;
  // Accepting starts only once serve() has filled `slot`.
  return std::make_shared<TcpListener>(
      worker.io(),
      [wctx, slot](tcp::socket socket) {
        const std::shared_ptr<ListenerContext>& context = *slot;
        if (wctx->draining() || context->draining.load(std::memory_order_relaxed) ||
            context->connections.load(std::memory_order_relaxed) >=
                context->current()->connection->limits.max_connections) {
          context->stats.downstream_cx_refused_total.inc();
          boost::system::error_code ignored;
          socket.close(ignored);
          return;
        }
        std::make_shared<DownstreamConnection>(*wctx, context, std::move(socket))->start();
      },
      [slot](const boost::system::error_code& ec) {
        const std::shared_ptr<ListenerContext>& context = *slot;
        context->stats.downstream_cx_accept_error_total.inc();
        spdlog::warn("listener '{}': accept failed ({}); pausing accepts for {} ms", context->name,
                     ec.message(), TcpListener::kPauseAfterResourceError.count());
      });
}

void ListenerSet::serve(Bound bound, std::shared_ptr<ListenerContext> context,
                        Duration drain_timeout) {
  *bound.context = std::move(context);
  const std::string name = bound.name;
  const std::string where = bound.address.to_string();
  std::optional<Bound> old;
  {
    std::lock_guard lock(mu_);
    // After stop_accepting() (a drain), a listener added by a reload closes its sockets as the
    // others did rather than accept connections only to refuse them.
    std::size_t i = 0;  // acceptors are in worker order
    for (WorkerContext* worker : workers_) {
      asio::post(worker->io(), [acceptor = bound.acceptors[i++], accept = accepting_] {
        if (accept) {
          acceptor->start();
        } else {
          acceptor->stop();
        }
      });
    }
    auto it = served_.find(name);
    if (it != served_.end()) {
      old = std::move(it->second);
      served_.erase(it);
    }
    served_.emplace(name, std::move(bound));
  }
  if (old) begin_retire(std::move(*old), "moved to " + where, drain_timeout);
}

void ListenerSet::retire(const std::string& name, Duration drain_timeout) {
  std::optional<Bound> bound;
  {
    std::lock_guard lock(mu_);
    auto it = served_.find(name);
    if (it == served_.end()) return;
    bound = std::move(it->second);
    served_.erase(it);
  }
  begin_retire(std::move(*bound), "removed", drain_timeout);
}

void ListenerSet::begin_retire(Bound bound, std::string why, Duration drain_timeout) {
  std::shared_ptr<ListenerContext> held = *bound.context;
  ListenerContext* context = held.get();
  context->draining.store(true, std::memory_order_relaxed);
  // Phase 1, as at shutdown: no new connections; GOAWAY(2^31-1) tells clients to stop opening
  // streams on the ones they have.
  on_each_worker([&](std::size_t i) {
    bound.acceptors[i]->stop();
    for (DownstreamConnection* c : workers_[i]->connections()) {
      if (&c->listener() == context) c->shutdown_notice();
    }
  });
  spdlog::info("listener '{}' ({}): closed {}:{}; draining {} connections (timeout {} ms)",
               context->name, why, bound.address.host, bound.port,
               context->connections.load(std::memory_order_relaxed), to_us(drain_timeout) / 1000);
  {
    std::lock_guard lock(mu_);
    retiring_.push_back(
        Retiring{std::move(held), std::move(why), SteadyClock::now(), drain_timeout});
  }
  asio::post(main_io_, [this] {
    if (ticking_ || stopped_) return;
    ticking_ = true;
    drain_tick();
  });
}

void ListenerSet::drain_tick() {
  if (stopped_) {
    ticking_ = false;
    return;
  }
  const TimePoint now = SteadyClock::now();
  std::lock_guard lock(mu_);
  std::erase_if(retiring_, [&](Retiring& r) {
    const std::string& name = r.context->name;
    if (r.context->connections.load(std::memory_order_relaxed) == 0) {
      spdlog::info("listener '{}' ({}): drained in {} ms", name, r.why,
                   to_us(now - r.since) / 1000);
      return true;
    }
    const Duration elapsed = now - r.since;
    // Phase 2, about one RTT after the first: the real GOAWAY with the last stream id served;
    // each connection closes once its streams are done.
    const Duration goaway_delay = std::min<Duration>(std::chrono::seconds(1), r.timeout / 2);
    if (!r.goaway_sent && elapsed >= goaway_delay) {
      r.goaway_sent = true;
      post_to_connections(r.context, [](DownstreamConnection& c) { c.goaway(); });
    }
    if (elapsed >= r.timeout && !r.terminated) {
      r.terminated = true;
      spdlog::warn("listener '{}' ({}): drain timeout: ending the streams still open", name, r.why);
      const std::string message = "sluice listener '" + name + "' " + r.why + " (drain timeout)";
      post_to_connections(r.context, [message](DownstreamConnection& c) {
        c.terminate_streams(EndReason::Drained, message);
      });
    } else if (r.terminated && elapsed >= r.timeout + std::chrono::seconds(1)) {
      // The ended streams had a second to flush.
      post_to_connections(r.context, [](DownstreamConnection& c) {
        c.close_now(CloseReason::Drained, "listener drained");
      });
      return true;
    }
    return false;
  });
  if (retiring_.empty()) {
    ticking_ = false;
    return;
  }
  drain_timer_.expires_after(kDrainTick);
  drain_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) {
      ticking_ = false;
      return;
    }
    drain_tick();
  });
}

void ListenerSet::post_to_connections(const std::shared_ptr<ListenerContext>& context,
                                      const std::function<void(DownstreamConnection&)>& fn) const {
  for (WorkerContext* worker : workers_) {
    asio::post(worker->io(), [worker, context, fn] {
      for (DownstreamConnection* c : worker->connections()) {
        if (&c->listener() == context.get()) fn(*c);
      }
    });
  }
}

void ListenerSet::on_each_worker(const std::function<void(std::size_t)>& fn) const {
  std::vector<std::future<void>> done;
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    auto task = std::make_shared<std::packaged_task<void()>>([&fn, i] { fn(i); });
    done.push_back(task->get_future());
    asio::post(workers_[i]->io(), [task] { (*task)(); });
  }
  for (auto& f : done) f.get();
}

std::vector<std::shared_ptr<ListenerContext>> ListenerSet::contexts() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<ListenerContext>> out;
  out.reserve(served_.size());
  for (const auto& [name, bound] : served_) out.push_back(*bound.context);
  return out;
}

std::shared_ptr<ListenerContext> ListenerSet::find(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = served_.find(name);
  return it == served_.end() ? nullptr : *it->second.context;
}

std::map<std::string, uint16_t> ListenerSet::ports() const {
  std::lock_guard lock(mu_);
  std::map<std::string, uint16_t> out;
  for (const auto& [name, bound] : served_) out[name] = bound.port;
  return out;
}

std::size_t ListenerSet::draining() const {
  std::lock_guard lock(mu_);
  return retiring_.size();
}

void ListenerSet::stop_accepting() {
  std::vector<std::vector<std::shared_ptr<TcpListener>>> acceptors;
  {
    std::lock_guard lock(mu_);
    accepting_ = false;
    for (const auto& [name, bound] : served_) acceptors.push_back(bound.acceptors);
  }
  on_each_worker([&](std::size_t i) {
    for (const auto& a : acceptors) a[i]->stop();
  });
}

void ListenerSet::stop_draining() {
  stopped_ = true;
  drain_timer_.cancel();
}

}  // namespace sluice
