// sluice-test-upstream: the gRPC service sluice is tested and benchmarked against. Simulates a
// service with N workers and a FIFO queue, whose service time follows --delay or --schedule.
#include <grpcpp/grpcpp.h>
#include <pthread.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "integration/common/duration_text.h"
#include "integration/upstream/service_schedule.h"
#include "integration/upstream/stats_json.h"
#include "integration/upstream/test_service_handler.h"
#include "integration/upstream/timer_threads.h"
#include "integration/upstream/upstream_stats.h"
#include "integration/upstream/worker_pool.h"

namespace {

constexpr int kMaxMessageBytes = 64 * 1024 * 1024;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string port_file;
  uint32_t workers = 0;
  std::string delay = "0";
  std::string schedule;
  std::string schedule_start = "first-request";
  std::string distribution;
  uint64_t seed = 1;
  int max_concurrent_streams = 0;
  uint32_t threads = 2;
  std::string shutdown_grace = "2s";
  bool bdp_probe = false;
  std::vector<std::string> grpc_args;
  std::string tls_cert;  // PEM files: serve TLS (hardening tests) instead of h2c
  std::string tls_key;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Written to a temporary name and renamed, so a poller never reads a half-written port.
bool write_port_file(const std::string& path, int port) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Blocked before gRPC starts its threads (they inherit the mask), so only sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Options opt;
  CLI::App app{"gRPC test upstream for sluice integration tests and benchmarks"};
  app.add_option("--host", opt.host, "Address to bind (IPv4 or IPv6, e.g. ::1)");
  app.add_option("--port", opt.port, "Port to bind; 0 picks an ephemeral port");
  app.add_option("--port-file", opt.port_file, "Write the bound port here once listening");
  app.add_option("--workers", opt.workers,
                 "Simulated workers serving a FIFO queue of work items; 0 = unlimited");
  app.add_option("--delay", opt.delay, "Service time per unary call and per streamed message");
  app.add_option("--schedule", opt.schedule,
                 "Service time over time, e.g. 10ms:12s,40ms:12s,10ms:12s (overrides --delay; "
                 "the last step's service time holds afterwards)");
  app.add_option("--distribution", opt.distribution,
                 "A random service time per job instead of --delay: uniform:MIN:MAX, "
                 "lognormal:MEDIAN:SIGMA (sigma of ln) or bimodal:FAST:SLOW:SHARE_SLOW, e.g. "
                 "bimodal:5ms:100ms:0.1; not with --schedule. A call's own service_time wins");
  app.add_option("--seed", opt.seed, "Seed of --distribution");
  app.add_option("--schedule-start", opt.schedule_start,
                 "When the schedule's clock starts: first-request or process")
      ->check(CLI::IsMember({"first-request", "process"}));
  app.add_option("--max-concurrent-streams", opt.max_concurrent_streams,
                 "SETTINGS_MAX_CONCURRENT_STREAMS to advertise; 0 = gRPC's default");
  app.add_option("--threads", opt.threads,
                 "Threads running the simulated workers' timers (gRPC's own callback threads "
                 "are not configurable in grpc 1.51)");
  app.add_option("--shutdown-grace", opt.shutdown_grace,
                 "On SIGTERM/SIGINT, time in-flight calls get before they are cancelled");
  app.add_flag("--bdp-probe", opt.bdp_probe,
               "Let gRPC grow its HTTP/2 receive windows by BDP probing. Off by default: the "
               "upstream then keeps 64 KiB windows and a slow worker pushes back on its sender, "
               "like a server that reads one message at a time; on, gRPC core buffers megabytes "
               "ahead of the application");
  app.add_option("--grpc-arg", opt.grpc_args,
                 "Extra server channel argument key=value (repeatable; integer values are "
                 "passed as integers), e.g. grpc.http2.lookahead_bytes=65535");
  app.add_option("--tls-cert", opt.tls_cert, "Serve TLS with this PEM certificate chain")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", opt.tls_key, "The PEM private key of --tls-cert")
      ->check(CLI::ExistingFile);
  CLI11_PARSE(app, argc, argv);
  if (opt.tls_cert.empty() != opt.tls_key.empty()) {
    std::cerr << "sluice-test-upstream: --tls-cert and --tls-key go together\n";
    return 2;
  }

  using sluice::itest::parse_duration;
  auto delay = parse_duration(opt.delay);
  auto grace = parse_duration(opt.shutdown_grace);
  if (!delay || !grace) {
    std::cerr << "sluice-test-upstream: bad duration in --delay or --shutdown-grace\n";
    return 2;
  }
  std::vector<sluice::itest::ScheduleStep> steps;
  if (!opt.schedule.empty()) {
    auto parsed = sluice::itest::ServiceSchedule::parse(opt.schedule);
    if (!parsed) {
      std::cerr << "sluice-test-upstream: bad --schedule '" << opt.schedule
                << "' (want SERVICE:LENGTH[,...], e.g. 10ms:12s,40ms:12s)\n";
      return 2;
    }
    steps = std::move(*parsed);
  }

  std::optional<sluice::itest::ServiceDistribution> distribution;
  if (!opt.distribution.empty()) {
    distribution = sluice::itest::ServiceDistribution::parse(opt.distribution);
    if (!distribution) {
      std::cerr << "sluice-test-upstream: bad --distribution '" << opt.distribution
                << "' (want uniform:MIN:MAX, lognormal:MEDIAN:SIGMA or "
                   "bimodal:FAST:SLOW:SHARE_SLOW)\n";
      return 2;
    }
    if (!steps.empty()) {
      std::cerr << "sluice-test-upstream: --distribution and --schedule go separately\n";
      return 2;
    }
  }

  const sluice::Clock& clock = sluice::RealClock::instance();
  const sluice::TimePoint process_start = clock.now();
  sluice::itest::TimerThreads timers(opt.threads);
  sluice::itest::ServiceSchedule schedule(*delay, std::move(steps),
                                          opt.schedule_start == "process"
                                              ? sluice::itest::ScheduleStart::kProcessStart
                                              : sluice::itest::ScheduleStart::kFirstRequest,
                                          process_start);
  if (distribution) schedule.set_distribution(std::move(*distribution), opt.seed);
  sluice::itest::WorkerPool pool(opt.workers, schedule, timers, clock);
  sluice::itest::UpstreamStats stats;
  sluice::itest::TestServiceHandler handler({pool, stats, schedule, clock}, process_start);

  // grpc.health.v1.Health, SERVING for "" and every service until SetHealth says otherwise.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int bound_port = 0;
  // An IPv6 literal ("::1") needs brackets before the port.
  const std::string host = opt.host.find(':') != std::string::npos && opt.host.front() != '['
                               ? "[" + opt.host + "]"
                               : opt.host;
  std::string address = host + ":" + std::to_string(opt.port);
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!opt.tls_cert.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({read_file(opt.tls_key), read_file(opt.tls_cert)});
    credentials = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort(address, credentials, &bound_port);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  if (opt.max_concurrent_streams > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, opt.max_concurrent_streams);
  }
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, opt.bdp_probe ? 1 : 0);
  for (const std::string& arg : opt.grpc_args) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "sluice-test-upstream: bad --grpc-arg '" << arg << "' (want key=value)\n";
      return 2;
    }
    std::string key = arg.substr(0, eq);
    std::string value = arg.substr(eq + 1);
    int number = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (ec == std::errc() && end == value.data() + value.size()) {
      builder.AddChannelArgument(key, number);
    } else {
      builder.AddChannelArgument(key, value);
    }
  }
  builder.RegisterService(&handler);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound_port == 0) {
    std::cerr << "sluice-test-upstream: cannot listen on " << address << "\n";
    return 1;
  }
  handler.set_health_service(server->GetHealthCheckService());
  std::cerr << "sluice-test-upstream: listening on " << opt.host << ":" << bound_port
            << " workers=" << opt.workers << " delay=" << sluice::itest::format_duration(*delay)
            << (opt.schedule.empty() ? "" : " schedule=" + opt.schedule)
            << (opt.distribution.empty() ? "" : " distribution=" + opt.distribution) << std::endl;
  if (!opt.port_file.empty() && !write_port_file(opt.port_file, bound_port)) {
    std::cerr << "sluice-test-upstream: cannot write " << opt.port_file << "\n";
    return 1;
  }

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::cerr << "sluice-test-upstream: signal " << signal_number << ", shutting down" << std::endl;
  server->Shutdown(std::chrono::system_clock::now() + *grace);
  // Every reactor has finished now, so no timer still refers to one.
  timers.stop();
  std::cout << sluice::itest::stats_to_json(handler.stats()) << std::endl;
  return 0;
}
