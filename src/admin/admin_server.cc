#include "src/admin/admin_server.h"

#include <pthread.h>

#include <chrono>
#include <exception>
#include <stdexcept>
#include <utility>

// GCC 12 reports -Wnull-dereference inside Asio's scheduler after inlining (a false positive in
// system headers that -isystem cannot silence, since the warning is raised at optimization time);
// the diagnostic state at those header lines is what counts, so it is disabled around them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#pragma GCC diagnostic pop

#include <spdlog/spdlog.h>

#include "src/admin/awaitable.h"

namespace sluice {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

constexpr auto kIdleTimeout = std::chrono::seconds(60);  // keep-alive connection, no request
constexpr auto kWriteTimeout = std::chrono::seconds(30);
constexpr std::size_t kMaxConnections = 64;  // admin is for a few operators and scrapers
constexpr std::size_t kMaxHeaderBytes = std::size_t{16} * 1024;
constexpr std::size_t kMaxRequestBodyBytes = std::size_t{64} * 1024;  // admin POSTs carry no body

std::string describe(const SocketAddress& a) {
  const bool v6 = a.host.find(':') != std::string::npos;
  return (v6 ? "[" + a.host + "]" : a.host) + ":" + std::to_string(a.port);
}

bool is_http_parse_error(const beast::error_code& ec) {
  return ec.category() == beast::error_code(http::error::bad_target).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

// Removes a connection from the server's set when its coroutine ends, however it ends.
class ConnectionEntry {
 public:
  ConnectionEntry(std::set<beast::tcp_stream*>& set, beast::tcp_stream* stream)
      : set_(set), stream_(stream) {
    set_.insert(stream_);
  }
  ~ConnectionEntry() { set_.erase(stream_); }
  ConnectionEntry(const ConnectionEntry&) = delete;
  ConnectionEntry& operator=(const ConnectionEntry&) = delete;

 private:
  std::set<beast::tcp_stream*>& set_;
  beast::tcp_stream* stream_;
};

}  // namespace

AdminServer::AdminServer(AdminConfig config, StatsRegistry& stats, AdminHooks& hooks,
                         HistoryOptions history)
    : config_(std::move(config)),
      history_(stats, hooks, history),
      handler_(stats, hooks, history_) {}

AdminServer::~AdminServer() { stop(); }

void AdminServer::start() {
  if (thread_.joinable()) throw std::logic_error("admin server already started");
  const std::string where = describe(config_.address);
  beast::error_code ec;
  tcp::resolver resolver(io_);
  auto results = resolver.resolve(config_.address.host, std::to_string(config_.address.port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    throw std::runtime_error("admin: cannot resolve " + where + ": " +
                             (ec ? ec.message() : std::string("no address")));
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  auto fail = [&where](const char* step, const beast::error_code& e) {
    return std::runtime_error("admin: cannot listen on " + where + ": " + step + ": " +
                              e.message());
  };
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) throw fail("socket", ec);
  acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (ec) throw fail("setsockopt", ec);
  acceptor_.bind(endpoint, ec);
  if (ec) throw fail("bind", ec);
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw fail("listen", ec);
  bound_port_ = acceptor_.local_endpoint().port();

  asio::co_spawn(io_, accept_loop(), [](const std::exception_ptr&) {});
  asio::co_spawn(io_, history_loop(), [](const std::exception_ptr&) {});
  thread_ = std::thread([this] { io_.run(); });
  pthread_setname_np(thread_.native_handle(), "sluice-admin");
}

void AdminServer::stop() {
  if (!thread_.joinable()) return;
  // Closing from the admin thread: the acceptor and sockets are not thread-safe. Every pending
  // operation then completes with operation_aborted, the coroutines return, and run() runs out
  // of work.
  asio::post(io_, [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
    history_timer_.cancel();
    for (beast::tcp_stream* stream : connections_) stream->socket().close(ignored);
  });
  thread_.join();
}

asio::awaitable<void> AdminServer::accept_loop() {
  for (;;) {
    auto [ec, socket] = co_await acceptor_.async_accept(kAsTuple);
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) continue;  // e.g. EMFILE or a reset before accept: keep serving the others
    if (connections_.size() >= kMaxConnections) {
      beast::error_code ignored;
      socket.close(ignored);
      continue;
    }
    asio::co_spawn(io_, serve(std::move(socket)), [](const std::exception_ptr&) {});
  }
}

asio::awaitable<void> AdminServer::history_loop() {
  auto next = SteadyClock::now();
  for (;;) {
    // stop() may run before this coroutine first does: then there is no wait to cancel.
    if (!acceptor_.is_open()) co_return;
    try {
      history_.sample(SteadyClock::now(), std::chrono::system_clock::now());
    } catch (const std::exception& e) {
      // A hook that throws costs one sample, never the history or the admin thread.
      spdlog::warn("admin history: sample failed: {}", e.what());
    }
    next += history_.options().interval;
    // After a long stall (a suspended VM) start afresh rather than firing a burst of samples.
    if (next < SteadyClock::now()) next = SteadyClock::now() + history_.options().interval;
    history_timer_.expires_at(next);
    auto [ec] = co_await history_timer_.async_wait(kAsTuple);
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
  }
}

asio::awaitable<void> AdminServer::serve(tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  ConnectionEntry entry(connections_, &stream);
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(kMaxRequestBodyBytes);
    stream.expires_after(kIdleTimeout);
    auto [read_ec, read_bytes] = co_await http::async_read(stream, buffer, parser, kAsTuple);
    if (read_ec) {
      if (is_http_parse_error(read_ec)) {
        // Tell the client what was wrong, then close: the stream position is unknown.
        HttpResponse res{read_ec == http::error::body_limit ? http::status::payload_too_large
                                                            : http::status::bad_request,
                         11};
        res.set(http::field::content_type, "text/plain; charset=utf-8");
        res.body() = "bad request: " + read_ec.message() + "\n";
        res.keep_alive(false);
        res.prepare_payload();
        stream.expires_after(kWriteTimeout);
        co_await http::async_write(stream, res, kAsTuple);
      }
      break;
    }
    const HttpRequest req = parser.release();
    HttpResponse res = handler_.handle(req);
    const bool keep_alive = res.keep_alive();
    stream.expires_after(kWriteTimeout);
    beast::error_code write_ec;
    if (req.method() == http::verb::head) {
      // Same headers as GET (Content-Length included), no body.
      http::response<http::empty_body> head{std::move(res.base())};
      std::tie(write_ec, std::ignore) = co_await http::async_write(stream, head, kAsTuple);
    } else {
      std::tie(write_ec, std::ignore) = co_await http::async_write(stream, res, kAsTuple);
    }
    if (write_ec || !keep_alive) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace sluice
