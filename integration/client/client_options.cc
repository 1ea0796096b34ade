#include "integration/client/client_options.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <tuple>

#include "integration/common/base64.h"
#include "integration/common/duration_text.h"

namespace sluice::itest {
namespace {

// "k=v"; a key ending in -bin takes a base64 value, decoded here.
std::optional<std::pair<std::string, std::string>> parse_pair(const std::string& item) {
  size_t eq = item.find('=');
  if (eq == std::string::npos || eq == 0) return std::nullopt;
  std::string key = item.substr(0, eq);
  std::string value = item.substr(eq + 1);
  // gRPC aborts the process on illegal metadata: reject it here as a usage error.
  for (char c : key) {
    bool legal =
        (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!legal) return std::nullopt;
  }
  if (key.ends_with("-bin")) {
    auto decoded = base64_decode(value);
    if (!decoded) return std::nullopt;
    value = std::move(*decoded);
  } else {
    for (char c : value) {
      if (c < 0x20 || c > 0x7e) return std::nullopt;
    }
  }
  return std::make_pair(std::move(key), std::move(value));
}

}  // namespace

std::variant<ClientOptions, int> parse_client_options(int argc, char** argv) {
  ClientOptions opt;
  std::string method = "unary";
  uint64_t count = 0;
  std::string duration, deadline, service_time, cancel_after;
  std::vector<std::string> metadata, trailing;
  int expect_status = -1;

  CLI::App app{"Drives one gRPC call of sluice.test.TestService and prints the result as JSON"};
  app.add_option("--target", opt.target, "host:port")->required();
  app.add_option("--method", method, "unary|server_stream|client_stream|bidi|fail")
      ->check(CLI::IsMember({"unary", "server_stream", "client_stream", "bidi", "fail"}));
  app.add_option("--count", count,
                 "Messages to send (client_stream, bidi) or receive (server_stream); default 1, "
                 "or unlimited with --duration");
  app.add_option("--size", opt.size, "Payload bytes of each request message");
  app.add_option("--response-size", opt.response_size, "Payload bytes of each response message");
  app.add_option("--rate", opt.rate, "Messages per second to offer (0 = as fast as possible)");
  app.add_option("--duration", duration, "Stop sending after this long (client_stream, bidi)");
  app.add_option("--deadline", deadline, "Call deadline, e.g. 2s");
  app.add_option("--service-time", service_time, "Ask the upstream for this service time");
  app.add_option("--cancel-after", cancel_after, "Cancel the call after this long");
  app.add_option("--metadata", metadata, "k=v request metadata (repeatable; -bin values base64)");
  app.add_option("--trailing", trailing,
                 "k=v trailing metadata the upstream should return (repeatable; -bin base64)");
  app.add_flag("--echo-metadata", opt.echo_metadata, "Ask the upstream to echo our metadata");
  app.add_option("--status-code", opt.status_code, "fail: the status code to return");
  app.add_option("--status-message", opt.status_message, "fail: the status message to return");
  app.add_option("--expect-status", expect_status,
                 "Exit 3 unless the call ends with this status code");
  app.add_option("--tls-ca", opt.tls_ca, "Speak TLS, verifying the server with this PEM CA file")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-server-name", opt.tls_server_name,
                 "With --tls-ca: the name to verify (default: the target's host)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  static const std::map<std::string, CallMethod> kMethods{
      {"unary", CallMethod::kUnary},
      {"server_stream", CallMethod::kServerStream},
      {"client_stream", CallMethod::kClientStream},
      {"bidi", CallMethod::kBidi},
      {"fail", CallMethod::kFail}};
  opt.method = kMethods.at(method);
  opt.method_name = method;

  auto duration_flag = [](const std::string& text, const char* name, std::optional<Duration>& out) {
    if (text.empty()) return true;
    out = parse_duration(text);
    if (!out) std::cerr << "sluice-test-client: bad duration for " << name << ": " << text << "\n";
    return out.has_value();
  };
  if (!duration_flag(duration, "--duration", opt.duration) ||
      !duration_flag(deadline, "--deadline", opt.deadline) ||
      !duration_flag(service_time, "--service-time", opt.service_time) ||
      !duration_flag(cancel_after, "--cancel-after", opt.cancel_after)) {
    return 2;
  }
  if (count > 0) {
    opt.count = count;
  } else if (!opt.duration) {
    opt.count = 1;
  }
  if (opt.rate < 0) {
    std::cerr << "sluice-test-client: --rate must be >= 0\n";
    return 2;
  }
  for (const auto& [flag, items, out] :
       {std::tuple{"--metadata", &metadata, &opt.metadata},
        std::tuple{"--trailing", &trailing, &opt.trailing_metadata}}) {
    for (const std::string& item : *items) {
      auto kv = parse_pair(item);
      if (!kv) {
        std::cerr << "sluice-test-client: bad " << flag << " '" << item
                  << "' (want k=v: lowercase key, printable value, base64 for -bin keys)\n";
        return 2;
      }
      out->push_back(std::move(*kv));
    }
  }
  if (expect_status >= 0) opt.expect_status = expect_status;
  return opt;
}

}  // namespace sluice::itest
