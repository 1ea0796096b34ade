// Maps one admin HTTP request to its response. Knows nothing of sockets, so every endpoint can
// be tested by calling handle(); AdminServer does the I/O. Runs on the admin thread only.
#pragma once

#include <atomic>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <string>

#include "src/admin/admin_hooks.h"
#include "src/admin/history_sampler.h"
#include "src/core/time.h"
#include "src/stats/stats_registry.h"

namespace sluice {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

class AdminHandler {
 public:
  // `history` is read by /history and /limits; whoever owns it samples it on the admin thread.
  AdminHandler(StatsRegistry& stats, AdminHooks& hooks, const HistorySampler& history,
               const Clock& clock = RealClock::instance());

  // The full response, body included, also for HEAD (the caller sends only the headers, so
  // Content-Length matches what GET would send). Never throws for bad input: a bad request is
  // a 4xx response.
  HttpResponse handle(const HttpRequest& req);

  // "LIVE", "DRAINING" or "HEALTHCHECK_FAILED", as /ready and /server_info report it.
  std::string state() const;

 private:
  enum class Methods { Read, Mutate };  // Read: GET and HEAD; Mutate: POST only
  using Endpoint = HttpResponse (AdminHandler::*)(const HttpRequest&, const std::string& query);
  struct Route {
    const char* path;
    Methods methods;
    Endpoint endpoint;
  };

  HttpResponse dashboard(const HttpRequest& req, const std::string& query);
  HttpResponse stats(const HttpRequest& req, const std::string& query);
  HttpResponse prometheus(const HttpRequest& req, const std::string& query);
  HttpResponse limits(const HttpRequest& req, const std::string& query);
  HttpResponse queues(const HttpRequest& req, const std::string& query);
  HttpResponse history(const HttpRequest& req, const std::string& query);
  HttpResponse config_dump(const HttpRequest& req, const std::string& query);
  HttpResponse ready(const HttpRequest& req, const std::string& query);
  HttpResponse server_info(const HttpRequest& req, const std::string& query);
  HttpResponse healthcheck_fail(const HttpRequest& req, const std::string& query);
  HttpResponse healthcheck_ok(const HttpRequest& req, const std::string& query);
  HttpResponse drain(const HttpRequest& req, const std::string& query);
  HttpResponse config_reload(const HttpRequest& req, const std::string& query);

  static const Route kRoutes[];

  StatsRegistry& stats_;
  AdminHooks& hooks_;
  const HistorySampler& history_;
  const Clock& clock_;
  std::atomic<bool> healthcheck_failed_{false};
};

}  // namespace sluice
