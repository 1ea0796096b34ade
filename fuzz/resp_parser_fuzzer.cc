// libFuzzer target: the RESP2 reply parser (src/queue/resp_parser.h) on bytes from a Redis
// server, trusted or not. Beyond "no crash, no UB, no unbounded allocation", it checks the
// property RedisConnection relies on when TCP cuts a reply anywhere: feeding the input in
// pieces gives exactly the replies and the final status of feeding it at once. Every reply
// also survives the round trip through RespValue::to_resp().
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "src/queue/resp_parser.h"

namespace {

using sluice::queue::RespLimits;
using sluice::queue::RespParser;
using sluice::queue::RespValue;

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "resp_parser_fuzzer: invariant violated: %s\n", what);
  std::abort();
}

struct Outcome {
  std::vector<RespValue> values;
  RespParser::Status last = RespParser::Status::NeedMore;
};

// Feeds `input` in chunks whose sizes cycle through 1..step (step 0: all at once).
Outcome parse(std::string_view input, std::size_t step, const RespLimits& limits) {
  RespParser p(limits);
  Outcome o;
  std::size_t chunk = 1;
  while (true) {
    const std::size_t n = step == 0 ? input.size() : std::min(chunk, input.size());
    p.feed(input.substr(0, n));
    input.remove_prefix(n);
    chunk = chunk % (step == 0 ? 1 : step) + 1;
    RespValue v;
    while ((o.last = p.next(v)) == RespParser::Status::Value) o.values.push_back(std::move(v));
    if (o.last == RespParser::Status::Error || input.empty()) return o;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // First byte: how to cut the rest, and whether to use small limits (to reach their checks).
  const std::size_t step = data[0] % 16;
  RespLimits limits;
  if ((data[0] & 0x80) != 0) {
    limits.max_line_bytes = 16;
    limits.max_bulk_bytes = 64;
    limits.max_array_elements = 8;
    limits.max_depth = 3;
    limits.max_reply_elements = 32;
    limits.max_reply_bytes = 512;
  }
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  const Outcome whole = parse(input, 0, limits);
  const Outcome pieces = parse(input, step == 0 ? 1 : step, limits);
  check(whole.values == pieces.values, "same replies whatever the split");
  check(whole.last == pieces.last, "same final status whatever the split");
  for (const RespValue& v : whole.values) {
    RespParser again(limits);
    again.feed(v.to_resp());
    RespValue back;
    check(again.next(back) == RespParser::Status::Value, "to_resp() parses back");
    check(back == v, "to_resp() round trip keeps the value");
  }
  return 0;
}
