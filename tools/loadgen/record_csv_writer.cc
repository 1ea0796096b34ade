#include "tools/loadgen/record_csv_writer.h"

#include <cstdio>
#include <utility>

namespace sluice::loadgen {
namespace {

std::string ms(Duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", to_ms(d));
  return buf;
}

}  // namespace

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

RecordCsvWriter::RecordCsvWriter(std::ostream& out, std::vector<std::string> phase_names)
    : out_(out), phase_names_(std::move(phase_names)) {
  out_ << "id,phase,phase_name,kind,worker,scheduled_ms,start_ms,end_ms,latency_ms,status,"
          "status_name,queue_us,messages_sent,send_slots_skipped,message\n";
}

void RecordCsvWriter::write(const CallRecord& r) {
  const std::string& phase =
      r.phase < phase_names_.size() ? phase_names_[r.phase] : std::string("?");
  out_ << r.id << ',' << r.phase << ',' << csv_field(phase) << ',' << kind_name(r.kind) << ','
       << r.worker << ',' << ms(r.scheduled) << ',';
  if (r.kind == RecordKind::kCall) {
    // Latency is written only for calls that happened; a skipped slot has none.
    out_ << ms(r.start) << ',' << ms(r.end) << ',' << ms(r.latency()) << ',' << r.status << ','
         << status_name(r.status) << ',';
  } else {
    out_ << ",,,,,";
  }
  if (r.queue_us) out_ << *r.queue_us;
  out_ << ',' << r.messages_sent << ',' << r.send_slots_skipped << ',' << csv_field(r.message)
       << '\n';
}

}  // namespace sluice::loadgen
