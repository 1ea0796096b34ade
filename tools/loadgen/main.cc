// sluice-loadgen: open- and closed-loop load for sluice.test.TestService, recording every call.
#include <variant>

#include "tools/loadgen/load_runner.h"
#include "tools/loadgen/loadgen_options.h"

int main(int argc, char** argv) {
  auto parsed = sluice::loadgen::parse_loadgen_options(argc, argv);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  sluice::loadgen::LoadRunner runner(std::get<sluice::loadgen::LoadgenOptions>(std::move(parsed)));
  return runner.run();
}
