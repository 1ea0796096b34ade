#include "src/admin/admin_client.h"

#include <arpa/inet.h>

#include <charconv>
#include <chrono>
#include <exception>
#include <utility>

// See admin_server.cc: GCC 12 false -Wnull-dereference in Asio's scheduler.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#pragma GCC diagnostic pop

#include "src/admin/awaitable.h"
#include "src/config/units.h"

namespace sluice {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

// /stats and /config_dump of a large config stay far below this; it only bounds a broken peer.
constexpr std::size_t kMaxReplyBytes = std::size_t{64} * 1024 * 1024;

AdminReply failure(AdminReply::Outcome outcome, std::string error) {
  AdminReply reply;
  reply.outcome = outcome;
  reply.error = std::move(error);
  return reply;
}

asio::awaitable<AdminReply> exchange(SocketAddress address, http::verb method, std::string target,
                                     Duration timeout) {
  const std::string where = address.to_string();
  const std::string no_answer = "no answer from " + where + " within " + format_duration(timeout);
  auto executor = co_await asio::this_coro::executor;
  tcp::resolver resolver(executor);
  auto [resolve_ec, endpoints] =
      co_await resolver.async_resolve(address.host, std::to_string(address.port), kAsTuple);
  if (resolve_ec) {
    co_return failure(AdminReply::Outcome::kUnreachable,
                      "cannot resolve " + address.host + ": " + resolve_ec.message());
  }

  beast::tcp_stream stream(executor);
  // One deadline for connect, write and read together: a probe has one budget, not three.
  stream.expires_after(timeout);
  auto [connect_ec, endpoint] = co_await stream.async_connect(endpoints, kAsTuple);
  if (connect_ec == beast::error::timeout) {
    co_return failure(AdminReply::Outcome::kTimedOut, no_answer);
  }
  if (connect_ec) {
    co_return failure(AdminReply::Outcome::kUnreachable,
                      "cannot connect to " + where + ": " + connect_ec.message());
  }

  http::request<http::empty_body> req{method, target, 11};
  req.set(http::field::host, where);
  req.set(http::field::user_agent, std::string("sluice-admin/") + SLUICE_VERSION);
  req.keep_alive(false);
  // The admin server wants a length on a POST, and an empty body is what these requests carry.
  if (method == http::verb::post) req.content_length(0);
  auto [write_ec, written] = co_await http::async_write(stream, req, kAsTuple);
  if (write_ec == beast::error::timeout) {
    co_return failure(AdminReply::Outcome::kTimedOut, no_answer);
  }
  if (write_ec) {
    co_return failure(AdminReply::Outcome::kBadResponse,
                      "sending to " + where + ": " + write_ec.message());
  }

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxReplyBytes);
  auto [read_ec, read] = co_await http::async_read(stream, buffer, parser, kAsTuple);
  if (read_ec == beast::error::timeout) {
    co_return failure(AdminReply::Outcome::kTimedOut, no_answer);
  }
  if (read_ec == http::error::end_of_stream) {
    co_return failure(AdminReply::Outcome::kBadResponse,
                      where + " closed the connection without a response");
  }
  if (read_ec) {
    co_return failure(AdminReply::Outcome::kBadResponse,
                      "reading the response from " + where + ": " + read_ec.message());
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);

  http::response<http::string_body> res = parser.release();
  AdminReply reply;
  reply.outcome = AdminReply::Outcome::kAnswered;
  reply.status = res.result_int();
  reply.reason = std::string(res.reason());
  reply.body = std::move(res.body());
  co_return reply;
}

}  // namespace

AdminClient::AdminClient(SocketAddress address, Duration timeout)
    : address_(std::move(address)), timeout_(timeout) {}

AdminReply AdminClient::request(std::string_view method, std::string_view target) const {
  const http::verb verb = http::string_to_verb(method);
  if (verb != http::verb::get && verb != http::verb::post) {
    return failure(AdminReply::Outcome::kBadResponse,
                   "unsupported method " + std::string(method) + " (GET or POST)");
  }
  AdminReply reply =
      failure(AdminReply::Outcome::kTimedOut,
              "no answer from " + address_.to_string() + " within " + format_duration(timeout_));
  asio::io_context io{1};
  asio::co_spawn(io, exchange(address_, verb, std::string(target), timeout_),
                 [&reply](const std::exception_ptr& e, AdminReply result) {
                   if (e) {
                     reply = failure(AdminReply::Outcome::kBadResponse, "admin request failed");
                   } else {
                     reply = std::move(result);
                   }
                 });
  // The stream's deadline covers connect, write and read; this one also covers the resolver,
  // which has no deadline of its own (a name lookup can hang on a dead DNS server). What is
  // still pending when it passes is abandoned with the io_context, and `reply` says timed out.
  io.run_for(timeout_ + std::chrono::milliseconds(100));
  return reply;
}

std::optional<SocketAddress> AdminClient::parse_address(std::string_view text) {
  SocketAddress address;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return std::nullopt;
    }
    address.host = std::string(text.substr(1, close - 1));
    in6_addr v6{};
    if (inet_pton(AF_INET6, address.host.c_str(), &v6) != 1) return std::nullopt;
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return std::nullopt;
    address.host = std::string(text.substr(0, colon));
    if (address.host.find(':') != std::string::npos) return std::nullopt;  // v6 needs brackets
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  address.port = static_cast<uint16_t>(value);
  return address;
}

}  // namespace sluice
