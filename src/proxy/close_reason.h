// Why an HTTP/2 connection (client or upstream side) closed. One list: the enum and its names
// come from it; each side counts the reasons it has counters for in one switch
// (DownstreamConnection::count_close, UpstreamConnection::count_close), so a new reason does
// not compile until both sides have decided what to count.
#pragma once

#include <cstdint>

namespace sluice {

// X(Enumerator, name)
#define SLUICE_CLOSE_REASONS(X)                                                        \
  X(Finished, "finished")                  /* both sides done, after GOAWAY */         \
  X(PeerClosed, "peer_closed")             /* the peer closed the connection */        \
  X(ReadError, "read_error")               /* a socket read failed */                  \
  X(WriteError, "write_error")             /* a socket write failed */                 \
  X(ProtocolError, "protocol_error")       /* the peer broke HTTP/2 or flooded */      \
  X(SessionError, "session_error")         /* nghttp2 failed producing output */       \
  X(TlsError, "tls_error")                 /* TLS handshake failed or no h2 */         \
  X(HandshakeTimeout, "handshake_timeout") /* TLS handshake / preface too slow */      \
  X(HeadersTimeout, "headers_timeout")     /* a header block did not complete */       \
  X(WriteTimeout, "write_timeout")         /* the peer stopped reading */              \
  X(IdleTimeout, "idle_timeout")           /* no streams, no frames */                 \
  X(PrematureResets, "premature_resets")   /* mostly streams reset before a reply */   \
  X(ConnectFailed, "connect_failed")       /* the upstream could not be reached */     \
  X(ConnectTimeout, "connect_timeout")     /* connect + TLS + SETTINGS too slow */     \
  X(KeepaliveTimeout, "keepalive_timeout") /* no answer to a PING in time */           \
  X(Drained, "drained")                    /* GOAWAY received or sent, streams done */ \
  X(Shutdown, "shutdown")                  /* sluice is stopping */

enum class CloseReason : uint8_t {
#define SLUICE_ENUMERATOR(e, name) e,
  SLUICE_CLOSE_REASONS(SLUICE_ENUMERATOR)
#undef SLUICE_ENUMERATOR
};

const char* to_string(CloseReason reason);

}  // namespace sluice
