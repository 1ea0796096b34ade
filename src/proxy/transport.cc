#include "src/proxy/transport.h"

namespace sluice {

std::string Transport::alpn() const {
  if (!tls_) return "";
  const unsigned char* proto = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(const_cast<SSL*>(tls_->native_handle()), &proto, &len);
  return proto == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(proto), len);
}

}  // namespace sluice
