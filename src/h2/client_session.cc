#include "src/h2/client_session.h"

namespace sluice::h2 {

ClientSession::ClientSession(Owner& owner, const Settings& settings)
    : Session(Role::Client, settings), owner_(owner) {
  start();
}

int32_t ClientSession::submit_request(const HeaderBlock& headers, bool with_body,
                                      StreamEvents* events) {
  auto& nv = nv_scratch();
  nv.clear();
  headers.append_nv(nv);
  return submit_request(nv, with_body, events);
}

int32_t ClientSession::submit_request(const std::vector<nghttp2_nv>& nv, bool with_body,
                                      StreamEvents* events) {
  nghttp2_data_provider provider = body_provider();
  const int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(),
                                            with_body ? &provider : nullptr, nullptr);
  if (id > 0) {
    add_stream(id, events);
    ++open_streams_;
    owner_.on_stream_count_changed();
  }
  return id;
}

void ClientSession::ping() { nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr); }

bool ClientSession::request_sent(int32_t stream_id) const {
  return nghttp2_session_find_stream(session_, stream_id) != nullptr;
}

}  // namespace sluice::h2
