// libFuzzer target: the YAML config loader (src/config). Any input either loads or throws
// ConfigError (the one error type the loader promises; anything else escaping is a bug), and a
// config that loads survives the /config_dump round trip unchanged (config_dump.h's promise).
#include <boost/json/serialize.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "filters/filter_registry.h"
#include "src/config/config_dump.h"
#include "src/config/config_loader.h"

namespace {

void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "config_loader_fuzzer: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  sluice::Config config;
  try {
    config = sluice::load_config_string(yaml, "fuzz.yaml", sluice::builtin_filters());
  } catch (const sluice::ConfigError&) {
    return 0;  // rejected, with a located message: the expected outcome for most inputs
  }
  const std::string dumped = boost::json::serialize(sluice::config_to_json(config));
  try {
    const sluice::Config again =
        sluice::load_config_string(dumped, "dump.json", sluice::builtin_filters());
    if (!(again == config)) fail("the dump loads back as a different config", dumped);
  } catch (const sluice::ConfigError& e) {
    fail("the dump of a valid config does not load", std::string(e.what()) + "\n" + dumped);
  }
  return 0;
}
