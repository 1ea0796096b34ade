// Raw HTTP/2 frames for tests that feed a session or the flood guard bytes a real client
// library would refuse to send.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sluice::h2::raw {

using Bytes = std::vector<uint8_t>;

// Frame types and flags (RFC 9113 section 6).
inline constexpr uint8_t kData = 0x0, kHeaders = 0x1, kPriority = 0x2, kRstStream = 0x3,
                         kSettings = 0x4, kPing = 0x6, kGoaway = 0x7, kWindowUpdate = 0x8,
                         kContinuation = 0x9;
inline constexpr uint8_t kEndStream = 0x1, kAck = 0x1, kEndHeaders = 0x4, kPadded = 0x8;

// One frame on the wire: the 9-byte header, then `payload`.
inline Bytes frame(uint8_t type, uint8_t flags, uint32_t stream, Bytes payload = {}) {
  const auto n = static_cast<uint32_t>(payload.size());
  // Sized up front and filled by index: GCC 12 at -O3 warns falsely (-Warray-bounds) about
  // vector::insert after a 9-byte initializer list.
  Bytes out(9 + payload.size());
  out[0] = static_cast<uint8_t>(n >> 16);
  out[1] = static_cast<uint8_t>(n >> 8);
  out[2] = static_cast<uint8_t>(n);
  out[3] = type;
  out[4] = flags;
  out[5] = static_cast<uint8_t>(stream >> 24);
  out[6] = static_cast<uint8_t>(stream >> 16);
  out[7] = static_cast<uint8_t>(stream >> 8);
  out[8] = static_cast<uint8_t>(stream);
  std::copy(payload.begin(), payload.end(), out.begin() + 9);
  return out;
}

inline Bytes operator+(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace sluice::h2::raw
