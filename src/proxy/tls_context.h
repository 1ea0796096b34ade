// OpenSSL contexts built from config: the listener side (certificate, ALPN h2, TLS 1.2+), at
// startup and again by a reload that changes the listener's tls block or its files' content, and
// the cluster side (CA verification, SNI, ALPN h2). Errors throw with the file and OpenSSL's
// reason, before anything is bound or changed.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "src/config/config.h"

namespace sluice {

// The bytes of a listener's certificate chain and key, read together: what its TLS context is
// built from, and what a reload compares to notice a rotated certificate.
struct ServerTlsFiles {
  std::string cert;
  std::string key;
  bool operator==(const ServerTlsFiles&) const = default;
};
// Throws std::runtime_error naming the file that cannot be read.
ServerTlsFiles read_server_tls_files(const ListenerTlsConfig& cfg);

std::shared_ptr<boost::asio::ssl::context> make_server_tls_context(const ListenerTlsConfig& cfg,
                                                                   const ServerTlsFiles& files);
std::shared_ptr<boost::asio::ssl::context> make_server_tls_context(const ListenerTlsConfig& cfg);
std::shared_ptr<boost::asio::ssl::context> make_client_tls_context(const ClusterTlsConfig& cfg);

// Per upstream connection: SNI `server_name` (unless it is an IP address) and, when `verify`,
// the name (or IP) the certificate must be for.
void set_client_tls_peer(SSL* ssl, const std::string& server_name, bool verify);

}  // namespace sluice
