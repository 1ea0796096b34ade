// Writes one CSV row per send slot of a client-streaming call, so sends per second, write
// blocking and skipped sends can be plotted over time.
#pragma once

#include <cstdint>
#include <ostream>

#include "src/core/time.h"

namespace sluice::loadgen {

struct SendRecord {
  uint64_t call_id = 0;
  uint64_t seq = 0;       // slot number within the call
  bool sent = false;      // false: skipped because the previous write was still in flight
  Duration scheduled{0};  // from the start of the run
  Duration start{0};      // sent only
  Duration done{0};       // sent only: when gRPC accepted the write (ok or not)
  bool ok = false;        // the write succeeded (false: the call was already over)
};

class SendCsvWriter {
 public:
  explicit SendCsvWriter(std::ostream& out);
  void write(const SendRecord& record);

 private:
  std::ostream& out_;
};

}  // namespace sluice::loadgen
