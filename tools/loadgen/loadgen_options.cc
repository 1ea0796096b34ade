#include "tools/loadgen/loadgen_options.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>

#include "integration/common/duration_text.h"

namespace sluice::loadgen {
namespace {

// Validates a duration flag; prints the problem and returns false when it does not parse.
bool duration_flag(const std::string& flag, const std::string& text, std::optional<Duration>& out) {
  if (text.empty()) return true;
  auto d = itest::parse_duration(text);
  if (!d) {
    std::cerr << "sluice-loadgen: " << flag << ": bad duration '" << text << "'\n";
    return false;
  }
  out = *d;
  return true;
}

}  // namespace

std::variant<LoadgenOptions, int> parse_loadgen_options(int argc, char** argv) {
  LoadgenOptions opt;
  std::string arrivals = "fixed", method = "unary";
  std::string deadline, drain, service_time, think = "0", lateness = "100ms";
  std::vector<std::string> metadata;

  CLI::App app{
      "Open- and closed-loop load generator for sluice.test.TestService. Open loop never catches "
      "up: a slot that comes while --max-outstanding calls are in flight is skipped and counted."};
  app.add_option("--target", opt.target, "host:port of sluice or the test upstream")->required();
  app.add_option("--phases", opt.phases_text,
                 "Comma-separated phases, run in order. Open loop: RATE/s:LENGTH (80/s:36s); "
                 "closed loop: WORKERSw:CALLS or WORKERSw:LENGTH (4w:40). Append @NAME to name "
                 "a phase (80/s:12s@slow)")
      ->required();
  app.add_option("--arrivals", arrivals, "Open loop: fixed or poisson")
      ->check(CLI::IsMember({"fixed", "poisson"}));
  app.add_option("--seed", opt.seed, "Seed of Poisson arrivals");
  app.add_option("--max-outstanding", opt.max_outstanding,
                 "Open loop: calls in flight at most; a slot beyond it is skipped (0 = no cap)");
  app.add_option("--max-lateness", lateness,
                 "Open loop: a slot the generator reaches later than this is skipped as late "
                 "(0 = never)");
  app.add_option("--think-time", think, "Closed loop: pause between a worker's calls");
  app.add_option("--deadline", deadline, "Per-call deadline (grpc-timeout), e.g. 80ms");
  app.add_option("--drain-timeout", drain,
                 "After the last phase, cancel calls still running after this long (default: "
                 "the deadline + 5s, or 60s without a deadline)");
  app.add_option("--method", method,
                 "unary, client_stream, or fail (the Fail RPC answering OK: a second unary "
                 "method with its own :path, for method mixes)")
      ->check(CLI::IsMember({"unary", "client_stream", "fail"}));
  app.add_option("--size", opt.size, "Request payload bytes (per message when streaming)");
  app.add_option("--response-size", opt.response_size, "Response payload bytes");
  app.add_option("--service-time", service_time,
                 "Ask the test upstream for this service time per call/message");
  app.add_option("--stream-messages", opt.stream_messages, "client_stream: messages per call");
  app.add_option("--stream-rate", opt.stream_rate,
                 "client_stream: messages/s offered within a call; a send slot that comes while "
                 "the previous write is in flight is skipped (0 = back to back)");
  app.add_option("--channels", opt.channels,
                 "gRPC channels (one HTTP/2 connection each), used round robin")
      ->check(CLI::Range(1, 1024));
  app.add_option("--metadata", metadata, "Extra request metadata key=value (repeatable)");
  app.add_option("--csv", opt.csv_path, "Write one row per scheduled slot here");
  app.add_option("--summary", opt.summary_path, "Write the JSON summary here");
  app.add_option("--sends-csv", opt.sends_csv_path,
                 "client_stream: write one row per send slot here");
  app.add_flag("--quiet", opt.quiet, "Do not print the per-phase table");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  auto phases = parse_phases(opt.phases_text);
  if (auto* error = std::get_if<std::string>(&phases)) {
    std::cerr << "sluice-loadgen: --phases: " << *error << "\n";
    return 2;
  }
  opt.phases = std::get<std::vector<Phase>>(std::move(phases));
  opt.arrivals = arrivals == "poisson" ? ArrivalProcess::kPoisson : ArrivalProcess::kFixed;
  opt.method = method == "client_stream" ? CallMethod::kClientStream
               : method == "fail"        ? CallMethod::kFail
                                         : CallMethod::kUnary;

  std::optional<Duration> think_d, lateness_d;
  if (!duration_flag("--deadline", deadline, opt.deadline) ||
      !duration_flag("--drain-timeout", drain, opt.drain_timeout) ||
      !duration_flag("--service-time", service_time, opt.service_time) ||
      !duration_flag("--think-time", think, think_d) ||
      !duration_flag("--max-lateness", lateness, lateness_d)) {
    return 2;
  }
  opt.think_time = think_d.value_or(Duration::zero());
  opt.max_lateness = lateness_d.value_or(Duration::zero());
  if (opt.stream_messages == 0 || opt.stream_rate < 0) {
    std::cerr << "sluice-loadgen: --stream-messages must be > 0 and --stream-rate >= 0\n";
    return 2;
  }
  for (const std::string& item : metadata) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "sluice-loadgen: --metadata: expected key=value, got '" << item << "'\n";
      return 2;
    }
    opt.metadata.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return opt;
}

}  // namespace sluice::loadgen
