#include "src/h2/session.h"

#include <algorithm>
#include <cstring>

namespace sluice::h2 {

namespace {

ssize_t read_body(nghttp2_session* s, int32_t stream_id, uint8_t* /*buf*/, size_t length,
                  uint32_t* data_flags, nghttp2_data_source* /*source*/, void* user) {
  StreamEvents* ev = static_cast<Session*>(user)->stream_events(stream_id);
  if (ev == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // detached: reset
  BodyBuffer* body = ev->outgoing();
  if (body == nullptr) return NGHTTP2_ERR_DEFERRED;
  if (!body->empty()) {
    *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    const std::size_t n = std::min(length, body->size());
    if (n == body->size() && body->finished()) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
      if (body->trailers()) {
        *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        auto& nv = nv_scratch();
        nv.clear();
        body->trailers()->append_nv(nv);
        if (nghttp2_submit_trailer(s, stream_id, nv.data(), nv.size()) != 0) {
          return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
      }
    }
    return static_cast<ssize_t>(n);
  }
  if (!body->finished()) return NGHTTP2_ERR_DEFERRED;
  *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  if (body->trailers()) {
    *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    auto& nv = nv_scratch();
    nv.clear();
    body->trailers()->append_nv(nv);
    if (nghttp2_submit_trailer(s, stream_id, nv.data(), nv.size()) != 0) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
  }
  return 0;
}

// The GOAWAY error code for a fatal nghttp2_session_mem_recv() result.
uint32_t goaway_code_for(int lib_error) {
  switch (lib_error) {
#ifdef SLUICE_HAVE_NGHTTP2_MAX_CONTINUATIONS
    case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS:
      return NGHTTP2_ENHANCE_YOUR_CALM;
#endif
    case NGHTTP2_ERR_NOMEM:
    case NGHTTP2_ERR_CALLBACK_FAILURE:
      return NGHTTP2_INTERNAL_ERROR;
    default:
      return NGHTTP2_PROTOCOL_ERROR;
  }
}

}  // namespace

// The nghttp2 callbacks: free functions that cast user_data and forward to the session.
struct SessionCallbacks {
  static Session& self(void* user) { return *static_cast<Session*>(user); }

  // Called for every frame header, in order, once the frames before it were processed.
  // HEADERS only: nghttp2 never calls it for a DATA frame it discards (see receive()).
  static int on_begin_frame(nghttp2_session* s, const nghttp2_frame_hd* hd, void* user) {
    Session& session = self(user);
    if (!session.closed_streams_ || hd->type != NGHTTP2_HEADERS) return 0;
    const int32_t id = hd->stream_id;
    if (id <= 0 || (id & 1) == 0) return 0;  // nghttp2's own connection errors
    if (id > session.closed_streams_->highest()) {
      session.closed_streams_->opened(id);
      return 0;
    }
    const uint32_t code = session.closed_stream_error(id, true);
    if (code == 0) return 0;
    // A connection error: GOAWAY with the code, and nothing after this frame is processed.
    nghttp2_session_terminate_session(s, code);
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }

  static int on_begin_headers(nghttp2_session* s, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    Session& session = self(user);
    const int32_t id = frame->hd.stream_id;
    if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      if (session.role_ != Session::Role::Server) return 0;
      // The advertised SETTINGS_MAX_CONCURRENT_STREAMS (see start()): refused, retryable.
      const bool over_limit = session.open_streams_ >= session.settings_.max_concurrent_streams;
      StreamEvents* ev = over_limit ? nullptr : session.on_new_stream(id);
      if (ev == nullptr) {
        session.on_stream_refused();
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      }
      session.add_stream(id, ev);
      ++session.open_streams_;
      session.on_stream_opened();
      ev->on_headers_begin(true);
      return 0;
    }
    if (StreamEvents* ev = session.stream_events(id)) {
      ev->on_headers_begin(frame->headers.cat == NGHTTP2_HCAT_RESPONSE);
    }
    return 0;
  }

  static int on_header(nghttp2_session* s, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                       void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    StreamEvents* ev = self(user).stream_events(frame->hd.stream_id);
    if (ev == nullptr) return 0;
    const uint32_t err =
        ev->on_header(std::string_view(reinterpret_cast<const char*>(name), namelen),
                      std::string_view(reinterpret_cast<const char*>(value), valuelen),
                      (flags & NGHTTP2_NV_FLAG_NO_INDEX) != 0);
    if (err != 0) {
      nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, frame->hd.stream_id, err);
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return 0;
  }

  static int on_frame_recv(nghttp2_session* /*s*/, const nghttp2_frame* frame, void* user) {
    Session& session = self(user);
    ++session.counters_.frames_received;
    switch (frame->hd.type) {
      case NGHTTP2_HEADERS: {
        ++session.counters_.stream_frames_received;
        StreamEvents* ev = self(user).stream_events(frame->hd.stream_id);
        if (ev != nullptr) ev->on_headers_end((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0);
        break;
      }
      case NGHTTP2_DATA: {
        ++session.counters_.stream_frames_received;
        if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) break;
        StreamEvents* ev = self(user).stream_events(frame->hd.stream_id);
        if (ev != nullptr) ev->on_data_end();
        break;
      }
      case NGHTTP2_RST_STREAM:
        session.last_reset_received_ = frame->hd.stream_id;
        ++session.counters_.resets_received;
        if (session.reset_rx_stat_ != nullptr) session.reset_rx_stat_->inc();
        break;
      case NGHTTP2_GOAWAY:
        ++session.counters_.goaways_received;
        session.on_goaway(frame->goaway.last_stream_id, frame->goaway.error_code);
        break;
      case NGHTTP2_SETTINGS:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) session.on_remote_settings();
        break;
      default:
        break;
    }
    return 0;
  }

  static int on_data_chunk_recv(nghttp2_session* s, uint8_t /*flags*/, int32_t stream_id,
                                const uint8_t* data, size_t len, void* user) {
    Session& session = self(user);
    session.counters_.data_bytes_received += len;
    // Connection credit is returned at once: stream windows bound what is buffered, so one
    // stalled stream never blocks the others.
    nghttp2_session_consume_connection(s, len);
    StreamEvents* ev = self(user).stream_events(stream_id);
    if (ev == nullptr) {
      nghttp2_session_consume_stream(s, stream_id, len);  // nobody wants it: keep the peer going
      return 0;
    }
    ev->on_data(data, len);
    return 0;
  }

  static int on_stream_close(nghttp2_session* /*s*/, int32_t stream_id, uint32_t error_code,
                             void* user) {
    Session& session = self(user);
    if (session.closed_streams_) {
      // nghttp2 closes a stream right after the RST_STREAM that closes it went out or came in.
      using How = ClosedStreams::How;
      session.closed_streams_->closed(stream_id,
                                      stream_id == session.last_reset_sent_       ? How::LocalReset
                                      : stream_id == session.last_reset_received_ ? How::PeerReset
                                                                                  : How::Ended);
    }
    StreamEvents* ev = session.stream_events(stream_id);
    if (ev != nullptr) {
      session.remove_stream(stream_id);
      if (session.open_streams_ > 0) --session.open_streams_;
      session.on_stream_closed();
      ev->on_close(error_code);
    }
    return 0;
  }

  static int on_frame_send(nghttp2_session* /*s*/, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_RST_STREAM) {
      self(user).last_reset_sent_ = frame->hd.stream_id;
      ++self(user).counters_.resets_sent;
      if (self(user).reset_tx_stat_ != nullptr) self(user).reset_tx_stat_->inc();
    }
    if ((frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
      if (StreamEvents* ev = self(user).stream_events(frame->hd.stream_id))
        ev->on_end_stream_sent();
    }
    return 0;
  }

  static int on_frame_not_send(nghttp2_session* /*s*/, const nghttp2_frame* frame,
                               int /*lib_error*/, void* user) {
    // A request whose HEADERS never went out (GOAWAY, reset before sending): nghttp2 opens no
    // stream and will not report a close, so report it here as refused (not processed).
    Session& session = self(user);
    if (session.role_ != Session::Role::Client || frame->hd.type != NGHTTP2_HEADERS ||
        frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
      return 0;
    }
    StreamEvents* ev = session.stream_events(frame->hd.stream_id);
    if (ev == nullptr) return 0;
    session.remove_stream(frame->hd.stream_id);
    if (session.open_streams_ > 0) --session.open_streams_;
    session.on_stream_closed();
    ev->on_close(NGHTTP2_REFUSED_STREAM);
    return 0;
  }

  static int send_data(nghttp2_session* /*s*/, nghttp2_frame* frame, const uint8_t* framehd,
                       size_t length, nghttp2_data_source* /*source*/, void* user) {
    Session& session = self(user);
    OutputQueue& out = *session.output_;
    StreamEvents* ev = self(user).stream_events(frame->hd.stream_id);
    BodyBuffer* body = ev != nullptr ? ev->outgoing() : nullptr;
    if (body == nullptr || body->size() < length) return NGHTTP2_ERR_CALLBACK_FAILURE;
    out.append(framehd, 9);
    // We never send padding (padlen is 0), so the frame is header + payload.
    body->take(length, out);
    session.counters_.data_bytes_sent += length;
    if (session.flood_guard_) session.flood_guard_->on_data_frame_sent();
    ev->on_outgoing_sent(length);
    return 0;
  }

  static int on_error(nghttp2_session* /*s*/, int /*code*/, const char* msg, size_t len,
                      void* user) {
    self(user).last_error_.assign(msg, len);
    return 0;
  }
};

std::vector<nghttp2_nv>& nv_scratch() {
  thread_local std::vector<nghttp2_nv> scratch;
  return scratch;
}

nghttp2_data_provider body_provider() {
  nghttp2_data_provider p;
  p.source.ptr = nullptr;
  p.read_callback = read_body;
  return p;
}

Session::Session(Role role, const Settings& settings, const FloodLimits& flood)
    : role_(role), settings_(settings), flood_limits_(flood) {
  if (role == Role::Server) {
    flood_guard_.emplace(flood, NGHTTP2_CLIENT_MAGIC_LEN);
    closed_streams_.emplace();
  }
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, SessionCallbacks::on_begin_frame);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, SessionCallbacks::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cbs, SessionCallbacks::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, SessionCallbacks::on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs,
                                                            SessionCallbacks::on_data_chunk_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, SessionCallbacks::on_stream_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, SessionCallbacks::on_frame_send);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs,
                                                           SessionCallbacks::on_frame_not_send);
  nghttp2_session_callbacks_set_send_data_callback(cbs, SessionCallbacks::send_data);
  nghttp2_session_callbacks_set_error_callback2(cbs, SessionCallbacks::on_error);

  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  nghttp2_option_set_no_auto_window_update(opt, 1);
  nghttp2_option_set_max_send_header_block_length(opt, std::size_t{256} * 1024);
  // nghttp2 bounds the closed streams it keeps for RFC 7540 priorities by the local
  // SETTINGS_MAX_CONCURRENT_STREAMS, which sluice does not give it (see start()). We send
  // SETTINGS_NO_RFC7540_PRIORITIES, so none are kept anyway; this makes it explicit.
  nghttp2_option_set_no_closed_streams(opt, 1);
  // Debian backports (detected by symbol, see CMakeLists.txt). Both are on by default in the
  // patched library; set explicitly so the values are ours and visible here. A header block
  // needs at most max_header_list_size / max_frame_size (60 KiB / 16 KiB) CONTINUATIONs.
#ifdef SLUICE_HAVE_NGHTTP2_MAX_CONTINUATIONS
  nghttp2_option_set_max_continuations(opt, 8);
#endif
#ifdef SLUICE_HAVE_NGHTTP2_RESET_RATE_LIMIT
  // Rapid reset (CVE-2023-44487): a burst of 1000 RST_STREAMs, then 33/s, then GOAWAY. Our own
  // premature-reset rule (DownstreamConnection) usually closes such a connection sooner.
  nghttp2_option_set_stream_reset_rate_limit(opt, 1000, 33);
#endif
  if (role == Role::Server) {
    nghttp2_session_server_new2(&session_, cbs, this, opt);
  } else {
    nghttp2_session_client_new2(&session_, cbs, this, opt);
  }
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
}

Session::~Session() { nghttp2_session_del(session_); }

void Session::start() {
  std::vector<nghttp2_settings_entry> iv = {
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, settings_.initial_stream_window},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, settings_.max_frame_size},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, settings_.max_header_list_size},
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
  };
  if (role_ == Role::Server) {
    // SETTINGS_MAX_CONCURRENT_STREAMS is not given to nghttp2: once the client ACKs it, nghttp2
    // 1.52 treats one stream too many as a connection error (PROTOCOL_ERROR). RFC 9113 5.1.2
    // names a stream error, and REFUSED_STREAM tells the client it may retry. So send() adds
    // the setting to the SETTINGS frame on the wire and on_begin_headers enforces it.
    advertise_max_streams_ = true;
  } else {
    iv.push_back({NGHTTP2_SETTINGS_ENABLE_PUSH, 0});
  }
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, iv.data(), iv.size());
  if (settings_.initial_connection_window > 65535) {
    nghttp2_session_set_local_window_size(
        session_, NGHTTP2_FLAG_NONE, 0, static_cast<int32_t>(settings_.initial_connection_window));
  }
}

uint32_t Session::closed_stream_error(int32_t id, bool headers) {
  // Open, half-closed or being reset by us: nghttp2 knows the state and applies 5.1 itself.
  if (id <= 0 || (id & 1) == 0 || id > closed_streams_->highest() ||
      nghttp2_session_find_stream(session_, id) != nullptr) {
    return 0;
  }
  const char* what = headers ? "HEADERS" : "DATA";
  switch (closed_streams_->judge(id, headers)) {
    case ClosedStreams::Verdict::Ignore:
      return 0;
    case ClosedStreams::Verdict::StreamClosed:
      last_error_ = std::string(what) + " on closed stream " + std::to_string(id);
      return NGHTTP2_STREAM_CLOSED;
    case ClosedStreams::Verdict::ProtocolError:
      last_error_ = std::string(what) + " on stream " + std::to_string(id) +
                    ", lower than a stream already opened";
      return NGHTTP2_PROTOCOL_ERROR;
  }
  return 0;
}

bool Session::feed(const uint8_t* data, std::size_t length) {
  if (length == 0) return true;
  const ssize_t rv = nghttp2_session_mem_recv(session_, data, length);
  if (rv < 0) {
    if (last_error_.empty()) last_error_ = nghttp2_strerror(static_cast<int>(rv));
    flooded_ = rv == NGHTTP2_ERR_FLOODED;
    // Some fatal errors (bad preface, CONTINUATION flood) queue no GOAWAY: say why we close
    // (RFC 9113 5.4.1). A no-op when nghttp2 already queued one.
    if (!flooded_) terminate(goaway_code_for(static_cast<int>(rv)));
    return false;
  }
  return true;
}

bool Session::receive(const uint8_t* data, std::size_t length) {
  counters_.bytes_received += length;
  std::size_t fed = 0;
  if (flood_guard_) {
    const FloodGuard::Verdict v = flood_guard_->scan(data, length);
    if (v != FloodGuard::Verdict::Ok) {
      // RFC 9113 5.4.1 / 7: ENHANCE_YOUR_CALM names exactly this. The bytes are not processed.
      last_error_ = std::string("flood: ") + FloodGuard::describe(v);
      terminate(NGHTTP2_ENHANCE_YOUR_CALM);
      return false;
    }
    // nghttp2 discards a DATA frame on a stream it forgot without a callback, so each DATA
    // frame is judged here, once nghttp2 has read every frame before it (RFC 9113 5.1).
    for (const auto& [at, id] : flood_guard_->data_frames()) {
      if (at > fed && !feed(data + fed, at - fed)) return false;
      fed = std::max(fed, at);
      if (const uint32_t code = closed_stream_error(id, false); code != 0) {
        terminate(code);
        return false;
      }
    }
  }
  if (!feed(data + fed, length - fed)) return false;
  if (flood_guard_ && !flood_guard_->self_dependent_streams().empty()) {
    reset_self_dependent_streams();
  }
  // nghttp2 queues what the peer's frames ask for (RST_STREAM for refused or malformed streams,
  // ACKs) without bound when the peer does not read (CVE-2019-9514/9517, MadeYouReset).
  if (flood_guard_ &&
      nghttp2_session_get_outbound_queue_size(session_) > flood_limits_.max_outbound_frames) {
    last_error_ = "flood: too many frames queued for a peer that does not read";
    flooded_ = true;
    return false;
  }
  return true;
}

void Session::reset_self_dependent_streams() {
  for (const int32_t id : flood_guard_->self_dependent_streams()) {
    if (nghttp2_session_find_stream(session_, id) != nullptr) {
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_PROTOCOL_ERROR);
    } else if (id > closed_streams_->highest()) {
      // Idle: the stream error closes it. A closed stream takes no frame but PRIORITY (5.1).
      const uint8_t rst[13] = {0,
                               0,
                               4,
                               NGHTTP2_RST_STREAM,
                               0,
                               static_cast<uint8_t>(id >> 24),
                               static_cast<uint8_t>(id >> 16),
                               static_cast<uint8_t>(id >> 8),
                               static_cast<uint8_t>(id),
                               0,
                               0,
                               0,
                               NGHTTP2_PROTOCOL_ERROR};
      own_frames_.insert(own_frames_.end(), std::begin(rst), std::end(rst));
      ++counters_.resets_sent;
      if (reset_tx_stat_ != nullptr) reset_tx_stat_->inc();
    }
  }
  flood_guard_->self_dependent_streams().clear();
}

bool Session::send(OutputQueue& out, std::size_t high_water) {
  output_ = &out;
  if (!own_frames_.empty() && !advertise_max_streams_) {  // never before our first SETTINGS
    out.append(own_frames_.data(), own_frames_.size());
    own_frames_.clear();
  }
  while (out.size() < high_water) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      output_ = nullptr;
      last_error_ = nghttp2_strerror(static_cast<int>(n));
      return false;
    }
    if (n == 0) break;
    if (advertise_max_streams_) {
      advertise_max_streams_ = false;
      append_initial_settings(out, data, static_cast<std::size_t>(n));
      continue;
    }
    out.append(data, static_cast<std::size_t>(n));
  }
  output_ = nullptr;
  return true;
}

void Session::append_initial_settings(OutputQueue& out, const uint8_t* frame, std::size_t n) {
  // mem_send returns one frame per call, and a server's first one is the SETTINGS that start()
  // submitted. Anything else would be a change in nghttp2: send it as is (the limit is still
  // enforced, just not advertised).
  constexpr std::size_t kHeader = 9;
  constexpr std::size_t kMaxPayload = 16384;  // the peer's frame limit before its SETTINGS
  const bool is_initial_settings =
      n >= kHeader && frame[3] == NGHTTP2_SETTINGS && frame[4] == NGHTTP2_FLAG_NONE &&
      ((std::size_t{frame[0]} << 16) | (std::size_t{frame[1]} << 8) | frame[2]) == n - kHeader &&
      n - kHeader + 6 <= kMaxPayload;
  if (!is_initial_settings) {
    out.append(frame, n);
    return;
  }
  const std::size_t length = n - kHeader + 6;
  const uint32_t v = settings_.max_concurrent_streams;
  uint8_t patched[kHeader + 6];
  std::memcpy(patched, frame, kHeader);
  patched[0] = static_cast<uint8_t>(length >> 16);
  patched[1] = static_cast<uint8_t>(length >> 8);
  patched[2] = static_cast<uint8_t>(length);
  const uint8_t entry[6] = {0,
                            NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS,
                            static_cast<uint8_t>(v >> 24),
                            static_cast<uint8_t>(v >> 16),
                            static_cast<uint8_t>(v >> 8),
                            static_cast<uint8_t>(v)};
  std::memcpy(patched + kHeader, entry, sizeof(entry));
  out.append(patched, kHeader);
  out.append(frame + kHeader, n - kHeader);
  out.append(patched + kHeader, sizeof(entry));
}

bool Session::want_read() const { return nghttp2_session_want_read(session_) != 0; }
bool Session::want_write() const {
  return !own_frames_.empty() || nghttp2_session_want_write(session_) != 0;
}

void Session::consume_stream(int32_t stream_id, std::size_t n) {
  if (n > 0) nghttp2_session_consume_stream(session_, stream_id, n);
}

void Session::resume_data(int32_t stream_id) { nghttp2_session_resume_data(session_, stream_id); }

void Session::reset_stream(int32_t stream_id, uint32_t error_code) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, error_code);
}

void Session::detach_stream(int32_t stream_id) {
  if (remove_stream(stream_id)) {
    if (open_streams_ > 0) --open_streams_;
    on_stream_closed();
  }
}

StreamEvents* Session::stream_events(int32_t stream_id) const {
  // Our own map, not nghttp2's stream user data: a request submitted but not yet sent has no
  // nghttp2 stream, so its user data could not be cleared when the proxy stream goes away.
  // Callbacks come in bursts for one stream (begin headers, each header, end): a one-entry
  // cache in front of the map saves most lookups.
  if (stream_id == cached_id_) return cached_events_;
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return nullptr;
  cached_id_ = stream_id;
  cached_events_ = it->second;
  return it->second;
}

void Session::add_stream(int32_t stream_id, StreamEvents* events) {
  streams_[stream_id] = events;
  if (stream_id == cached_id_) cached_events_ = events;
}

bool Session::remove_stream(int32_t stream_id) {
  if (stream_id == cached_id_) {
    cached_id_ = 0;  // stream 0 is the connection: never a stream id in the map
    cached_events_ = nullptr;
  }
  return streams_.erase(stream_id) > 0;
}

void Session::terminate(uint32_t error_code) {
  nghttp2_session_terminate_session(session_, error_code);
}

uint32_t Session::remote_max_concurrent_streams() const {
  return nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

}  // namespace sluice::h2
