// libFuzzer target: the queue's codecs (src/queue/metadata_codec.h, queue_envelope.h,
// queue_reply.h), which decode what other processes wrote into Redis. Beyond "garbage is an
// error value, never a crash", it checks that whatever decodes re-encodes to something that
// decodes to the same thing, and that metadata has exactly one encoding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "src/queue/metadata_codec.h"
#include "src/queue/queue_envelope.h"
#include "src/queue/queue_reply.h"

namespace {

using namespace sluice::queue;

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "queue_codec_fuzzer: invariant violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // Metadata: canonical netstrings, so decode then encode gives the input back.
  if (const auto meta = decode_metadata(input)) {
    check(encode_metadata(*meta) == input, "metadata encoding is unique");
  }

  // A reply list element.
  if (const auto reply = QueueReply::decode(input); reply.ok()) {
    const auto again = QueueReply::decode(reply->encode());
    check(again.ok(), "an encoded reply decodes");
    check(*again == *reply, "reply round trip");
  }

  // A stream entry: the input read as netstrings, name then value (as XREADGROUP gives them).
  StreamFields fields;
  std::string_view rest = input;
  while (!rest.empty()) {
    const auto name = read_netstring(rest);
    if (!name) break;
    const auto value = read_netstring(rest);
    if (!value) break;
    fields.emplace_back(std::string(*name), std::string(*value));
  }
  if (const auto envelope = QueueEnvelope::decode(fields); envelope.ok()) {
    const auto again = QueueEnvelope::decode(envelope->encode());
    check(again.ok(), "an encoded envelope decodes");
    check(*again == *envelope, "envelope round trip");
  }
  return 0;
}
