// sluice-test-client: drives one call of sluice.test.TestService (directly or through sluice)
// and prints what happened as one JSON object. Exit 0 when the call finished, whatever its status;
// 2 on usage errors; 3 when --expect-status was given and not met.
#include <grpcpp/grpcpp.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <variant>

#include "integration/client/call_runner.h"
#include "integration/client/client_options.h"

int main(int argc, char** argv) {
  auto parsed = sluice::itest::parse_client_options(argc, argv);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  auto& options = std::get<sluice::itest::ClientOptions>(parsed);

  grpc::ChannelArguments args;
  constexpr int kMaxMessageBytes = 64 * 1024 * 1024;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // Tests talk to loopback; an http_proxy in the environment must not redirect them.
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options.tls_ca.empty()) {
    std::ifstream in(options.tls_ca);
    std::ostringstream pem;
    pem << in.rdbuf();
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pem.str();
    credentials = grpc::SslCredentials(ssl);
    if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
  }
  auto channel = grpc::CreateCustomChannel(options.target, credentials, args);

  std::optional<int> expect = options.expect_status;
  sluice::itest::CallRunner runner(std::move(options), channel);
  sluice::itest::CallResult result = runner.run();
  std::cout << boost::json::serialize(sluice::itest::to_json(result)) << std::endl;
  if (expect && *expect != result.status_code) {
    std::cerr << "sluice-test-client: expected status " << *expect << ", got " << result.status_code
              << " (" << result.status_message << ")\n";
    return 3;
  }
  return 0;
}
