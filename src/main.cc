// sluice: an overload-control sidecar proxy for gRPC services.
//   sluice --config FILE [--ready-file PATH]   run
//   sluice validate FILE                        check a config and exit 0 or 1
//   sluice admin GET|POST PATH [--address A]    one request to a running sluice's admin server
//   sluice --version | --help
// Usage errors exit with status 2.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>

#include "filters/filter_registry.h"
#include "src/admin/admin_client.h"
#include "src/config/config_loader.h"
#include "src/config/units.h"
#include "src/server/server.h"

namespace {

void setup_logging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("sluice");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%Y-%m-%dT%H:%M:%S.%e] [%l] %v");
  spdlog::set_level(spdlog::level::from_str(level));
}

int run_server(const std::string& config_path, const std::string& ready_file,
               const std::string& log_level_override) {
  sluice::Config config;
  try {
    config = sluice::load_config_file(config_path, sluice::builtin_filters());
  } catch (const sluice::ConfigError& e) {
    std::fprintf(stderr, "sluice: invalid configuration: %s\n", e.what());
    return 1;
  }
  setup_logging(log_level_override.empty() ? config.log_level : log_level_override);
  try {
    sluice::Server server(std::move(config));
    server.set_log_level_override(log_level_override);
    server.start();
    if (!ready_file.empty()) server.write_ready_file(ready_file);
    return server.run();
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    std::fprintf(stderr, "sluice: %s\n", e.what());
    return 1;
  }
}

struct AdminCommand {
  std::string method;
  std::string path;
  std::string address = "127.0.0.1:9901";
  std::string timeout = "3s";
  std::string delay = "0s";
};

// Exit status: 0 on a 2xx answer, 1 on any other answer or none (Docker reads 1 as unhealthy
// and reserves 2), 2 on a malformed option.
int run_admin(const AdminCommand& cmd) {
  const auto address = sluice::AdminClient::parse_address(cmd.address);
  const auto timeout = sluice::parse_duration(cmd.timeout);
  const auto delay = sluice::parse_duration(cmd.delay);
  if (!address) {
    std::fprintf(stderr, "sluice admin: --address %s: want host:port or [ipv6]:port\n",
                 cmd.address.c_str());
    return 2;
  }
  if (!timeout || *timeout <= sluice::Duration::zero() || !delay) {
    std::fprintf(stderr,
                 "sluice admin: --timeout and --delay take a duration such as 3s or 500ms\n");
    return 2;
  }
  if (cmd.path.empty() || cmd.path.front() != '/') {
    std::fprintf(stderr, "sluice admin: PATH must start with / (got '%s')\n", cmd.path.c_str());
    return 2;
  }
  // A preStop hook: the pod keeps serving while endpoints forget it, then drains.
  std::this_thread::sleep_for(*delay);
  const sluice::AdminReply reply =
      sluice::AdminClient(*address, *timeout).request(cmd.method, cmd.path);
  if (reply.outcome != sluice::AdminReply::Outcome::kAnswered) {
    std::fprintf(stderr, "sluice admin: %s %s: %s\n", cmd.method.c_str(), cmd.path.c_str(),
                 reply.error.c_str());
    return 1;
  }
  std::fwrite(reply.body.data(), 1, reply.body.size(), stdout);
  if (!reply.ok()) {
    std::fprintf(stderr, "sluice admin: %s %s: %u %s\n", cmd.method.c_str(), cmd.path.c_str(),
                 reply.status, reply.reason.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sluice: an overload-control sidecar proxy for gRPC services"};
  app.set_version_flag("--version", std::string("sluice ") + SLUICE_VERSION);
  std::string config_path;
  std::string ready_file;
  std::string log_level;
  app.add_option("-c,--config", config_path, "YAML configuration file to run with");
  app.add_option("--ready-file", ready_file,
                 R"(Once listening, write {"admin_port":N,"listeners":{name:port}} here)");
  app.add_option("--log-level", log_level, "Override log_level: trace|debug|info|warn|error|off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

  std::string validate_path;
  CLI::App* validate = app.add_subcommand("validate", "Check a configuration file and exit");
  validate->add_option("file", validate_path, "YAML configuration file")->required();

  AdminCommand admin_cmd;
  CLI::App* admin = app.add_subcommand(
      "admin", "Send one request to a running sluice's admin server; exit 0 only on a 2xx answer");
  admin->add_option("method", admin_cmd.method, "GET or POST")
      ->required()
      ->transform(CLI::IsMember({"GET", "POST"}, CLI::ignore_case));
  admin->add_option("path", admin_cmd.path, "Admin path: /ready, /drain, /stats?format=json, ...")
      ->required();
  admin->add_option("--address", admin_cmd.address, "The admin server's host:port")
      ->envname("SLUICE_ADMIN_ADDRESS")
      ->capture_default_str();
  admin->add_option("--timeout", admin_cmd.timeout, "Limit on the whole request")
      ->capture_default_str();
  admin
      ->add_option("--delay", admin_cmd.delay,
                   "Wait this long first (preStop hook: keep serving, then POST /drain)")
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2, which Docker health checks never
    // take for "unhealthy" (1) and scripts can tell from a failed request.
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (*admin) return run_admin(admin_cmd);
  if (*validate) {
    try {
      const sluice::Config c = sluice::load_config_file(validate_path, sluice::builtin_filters());
      std::printf("%s: OK (%zu listener(s), %zu cluster(s), %u worker(s))\n", validate_path.c_str(),
                  c.listeners.size(), c.clusters.size(), c.workers);
      return 0;
    } catch (const sluice::ConfigError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
  }
  if (config_path.empty()) {
    std::fprintf(stderr, "sluice: --config FILE is required (or: sluice validate FILE)\n%s",
                 app.help().c_str());
    return 2;
  }
  return run_server(config_path, ready_file, log_level);
}
