#include "src/h2/server_session.h"

namespace sluice::h2 {

ServerSession::ServerSession(Owner& owner, const Settings& settings, const FloodLimits& flood)
    : Session(Role::Server, settings, flood), owner_(owner) {
  start();
}

bool ServerSession::submit_response(int32_t stream_id, const HeaderBlock& headers, bool with_body) {
  auto& nv = nv_scratch();
  nv.clear();
  headers.append_nv(nv);
  nghttp2_data_provider provider = body_provider();
  return nghttp2_submit_response(session_, stream_id, nv.data(), nv.size(),
                                 with_body ? &provider : nullptr) == 0;
}

void ServerSession::submit_shutdown_notice() { nghttp2_submit_shutdown_notice(session_); }

void ServerSession::submit_goaway(uint32_t error_code) {
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), error_code, nullptr, 0);
}

int32_t ServerSession::last_stream_id() const {
  return nghttp2_session_get_last_proc_stream_id(session_);
}

}  // namespace sluice::h2
