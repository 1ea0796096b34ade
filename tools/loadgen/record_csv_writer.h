// Writes one CSV row per record, times in milliseconds from the start of the run, so a plot or a
// later analysis can recompute anything the summary says.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tools/loadgen/call_record.h"

namespace sluice::loadgen {

class RecordCsvWriter {
 public:
  // Writes the header line at once.
  RecordCsvWriter(std::ostream& out, std::vector<std::string> phase_names);

  void write(const CallRecord& record);

 private:
  std::ostream& out_;
  std::vector<std::string> phase_names_;
};

// Quotes a CSV field when it holds a comma, quote or line break.
std::string csv_field(const std::string& text);

}  // namespace sluice::loadgen
