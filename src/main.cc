// sluice: an overload-control sidecar proxy for gRPC services.
//   sluice --config FILE [--ready-file PATH]   run
//   sluice validate FILE                        check a config and exit 0 or 1
//   sluice --version | --help
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

#include "filters/filter_registry.h"
#include "src/config/config_loader.h"
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
    server.start();
    if (!ready_file.empty()) server.write_ready_file(ready_file);
    return server.run();
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    std::fprintf(stderr, "sluice: %s\n", e.what());
    return 1;
  }
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
                 "Once listening, write {\"admin_port\":N,\"listeners\":{name:port}} here");
  app.add_option("--log-level", log_level, "Override log_level: trace|debug|info|warn|error|off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

  std::string validate_path;
  CLI::App* validate = app.add_subcommand("validate", "Check a configuration file and exit");
  validate->add_option("file", validate_path, "YAML configuration file")->required();

  CLI11_PARSE(app, argc, argv);

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
