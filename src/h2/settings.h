// The HTTP/2 settings a session advertises and enforces. The codec's own options: the config's
// `http2:` blocks (listener: to clients; cluster: to the upstream) are read into this struct.
#pragma once

#include <cstdint>

namespace sluice::h2 {

struct Settings {
  uint32_t max_concurrent_streams = 100;
  uint32_t initial_stream_window = 64 * 1024;
  uint32_t initial_connection_window = 1024 * 1024;
  uint32_t max_frame_size = 16 * 1024;
  uint32_t max_header_list_size = 60 * 1024;  // SETTINGS_MAX_HEADER_LIST_SIZE, enforced
  // Fields per header block; enforced by the stream's owner (ProxyStream resets past it).
  uint32_t max_headers_count = 100;

  bool operator==(const Settings&) const = default;
};

}  // namespace sluice::h2
