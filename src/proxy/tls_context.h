// OpenSSL contexts built once at startup from config: the listener side (certificate, ALPN h2,
// TLS 1.2+) and the cluster side (CA verification, SNI, ALPN h2). Errors throw with the file
// and OpenSSL's reason, before anything is bound.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "src/config/config.h"

namespace sluice {

std::shared_ptr<boost::asio::ssl::context> make_server_tls_context(const ListenerTlsConfig& cfg);
std::shared_ptr<boost::asio::ssl::context> make_client_tls_context(const ClusterTlsConfig& cfg);

// Per upstream connection: SNI `server_name` (unless it is an IP address) and, when `verify`,
// the name (or IP) the certificate must be for.
void set_client_tls_peer(SSL* ssl, const std::string& server_name, bool verify);

}  // namespace sluice
