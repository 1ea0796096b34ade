#include "src/proxy/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ip/address.hpp>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace sluice {

namespace ssl = boost::asio::ssl;

namespace {

// Mozilla "intermediate" TLS 1.2 suites: forward secrecy and AEAD only.
constexpr const char* kDefaultCiphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

// ALPN (server): only h2 is spoken; a client that does not offer it fails the handshake.
int select_h2(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen,
              const unsigned char* in, unsigned int inlen, void* /*arg*/) {
  for (unsigned int i = 0; i < inlen;) {
    const unsigned int len = in[i];
    if (i + 1 + len > inlen) break;
    if (len == 2 && std::memcmp(in + i + 1, "h2", 2) == 0) {
      *out = in + i + 1;
      *outlen = 2;
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

std::string read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) throw std::runtime_error(std::string(what) + " " + path + ": cannot read the file");
  return std::move(bytes).str();
}

void set_min_version(SSL_CTX* ctx, const std::string& v) {
  SSL_CTX_set_min_proto_version(ctx, v == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION);
}

}  // namespace

ServerTlsFiles read_server_tls_files(const ListenerTlsConfig& cfg) {
  return ServerTlsFiles{read_file(cfg.cert_file, "tls.cert"), read_file(cfg.key_file, "tls.key")};
}

std::shared_ptr<ssl::context> make_server_tls_context(const ListenerTlsConfig& cfg) {
  return make_server_tls_context(cfg, read_server_tls_files(cfg));
}

std::shared_ptr<ssl::context> make_server_tls_context(const ListenerTlsConfig& cfg,
                                                      const ServerTlsFiles& files) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_options(
      native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  set_min_version(native, cfg.min_version);
  const std::string ciphers = cfg.ciphers.empty() ? kDefaultCiphers : cfg.ciphers;
  if (SSL_CTX_set_cipher_list(native, ciphers.c_str()) != 1) {
    throw std::runtime_error("tls.ciphers: no usable cipher in '" + ciphers + "'");
  }
  // From the bytes read once: the context is exactly what `files` holds, even if the files are
  // being rewritten meanwhile (a rotation), and what the next reload compares against.
  boost::system::error_code ec;
  ctx->use_certificate_chain(boost::asio::buffer(files.cert), ec);
  if (ec) throw std::runtime_error("tls.cert " + cfg.cert_file + ": " + ec.message());
  ctx->use_private_key(boost::asio::buffer(files.key), ssl::context::pem, ec);
  if (ec) throw std::runtime_error("tls.key " + cfg.key_file + ": " + ec.message());
  if (SSL_CTX_check_private_key(native) != 1) {
    throw std::runtime_error("tls.key " + cfg.key_file + " does not match tls.cert " +
                             cfg.cert_file);
  }
  SSL_CTX_set_alpn_select_cb(native, select_h2, nullptr);
  return ctx;
}

std::shared_ptr<ssl::context> make_client_tls_context(const ClusterTlsConfig& cfg) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_options(native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  set_min_version(native, "1.2");
  if (cfg.verify) {
    if (cfg.ca_file.empty()) {
      ctx->set_default_verify_paths();
    } else if (SSL_CTX_load_verify_locations(native, cfg.ca_file.c_str(), nullptr) != 1) {
      throw std::runtime_error("tls.ca " + cfg.ca_file + ": " + openssl_error());
    }
    ctx->set_verify_mode(ssl::verify_peer);
  } else {
    ctx->set_verify_mode(ssl::verify_none);
  }
  if (!cfg.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(native, cfg.cert_file.c_str()) != 1) {
      throw std::runtime_error("tls.cert " + cfg.cert_file + ": " + openssl_error());
    }
    if (SSL_CTX_use_PrivateKey_file(native, cfg.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      throw std::runtime_error("tls.key " + cfg.key_file + ": " + openssl_error());
    }
  }
  static const unsigned char kAlpn[] = {2, 'h', '2'};
  SSL_CTX_set_alpn_protos(native, kAlpn, sizeof(kAlpn));
  return ctx;
}

void set_client_tls_peer(SSL* ssl, const std::string& server_name, bool verify) {
  boost::system::error_code bad_ip;
  boost::asio::ip::make_address(server_name, bad_ip);
  if (bad_ip) {  // SNI is for names, not addresses (the macro form uses a C cast)
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(server_name.c_str()));
  }
  if (verify) {
    SSL_set_verify(ssl, SSL_VERIFY_PEER, nullptr);
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    if (bad_ip) {
      X509_VERIFY_PARAM_set1_host(param, server_name.c_str(), 0);
    } else {
      X509_VERIFY_PARAM_set1_ip_asc(param, server_name.c_str());
    }
  }
}

}  // namespace sluice
