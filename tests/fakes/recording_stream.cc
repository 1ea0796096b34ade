#include "tests/fakes/recording_stream.h"

#include <gtest/gtest.h>

namespace sluice::h2 {

std::string RecordingStream::header(std::size_t block, const std::string& name) const {
  if (block >= blocks.size()) return "";
  for (const auto& [n, v] : blocks[block].second)
    if (n == name) return v;
  return "";
}

std::string RecordingStream::last_header(const std::string& name) const {
  return blocks.empty() ? "" : header(blocks.size() - 1, name);
}

StreamEvents* RecordingServerOwner::on_new_stream(int32_t id) {
  auto s = std::make_unique<RecordingStream>();
  s->serve = false;  // until a response is submitted
  auto* raw = s.get();
  streams[id] = std::move(s);
  return raw;
}

HeaderBlock grpc_request_headers(std::string_view path) {
  HeaderBlock h;
  h.add(":method", "POST");
  h.add(":scheme", "http");
  h.add(":authority", "test");
  h.add(":path", path);
  h.add("content-type", "application/grpc");
  h.add("te", "trailers");
  return h;
}

void fill(BodyBuffer& body, std::string_view text) {
  body.append(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

std::size_t transfer(Session& from, Session& to) {
  OutputQueue q;
  EXPECT_TRUE(from.send(q, 1 << 30));
  std::string bytes;
  q.for_each_front(1u << 20, [&](const uint8_t* p, std::size_t n) {
    bytes.append(reinterpret_cast<const char*>(p), n);
  });
  q.consume(q.size());
  if (!bytes.empty()) {
    EXPECT_TRUE(to.receive(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()))
        << to.last_error();
  }
  return bytes.size();
}

}  // namespace sluice::h2
