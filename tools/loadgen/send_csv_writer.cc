#include "tools/loadgen/send_csv_writer.h"

#include <cstdio>

namespace sluice::loadgen {

SendCsvWriter::SendCsvWriter(std::ostream& out) : out_(out) {
  out_ << "call_id,seq,kind,scheduled_ms,start_ms,done_ms,write_ms,ok\n";
}

void SendCsvWriter::write(const SendRecord& r) {
  char buf[160];
  if (r.sent) {
    std::snprintf(buf, sizeof buf, "%.3f,%.3f,%.3f,%.3f,%d", to_ms(r.scheduled), to_ms(r.start),
                  to_ms(r.done), to_ms(r.done - r.start), r.ok ? 1 : 0);
    out_ << r.call_id << ',' << r.seq << ",sent," << buf << '\n';
  } else {
    std::snprintf(buf, sizeof buf, "%.3f", to_ms(r.scheduled));
    out_ << r.call_id << ',' << r.seq << ",skipped," << buf << ",,,,\n";
  }
}

}  // namespace sluice::loadgen
