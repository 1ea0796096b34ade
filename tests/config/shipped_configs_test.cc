// Every YAML file shipped under config/ must load, so that CI catches a broken example.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <set>

#include "filters/filter_registry.h"
#include "src/config/config_dump.h"
#include "src/config/config_loader.h"

namespace sluice {
namespace {

const std::filesystem::path kConfigDir = SLUICE_SHIPPED_CONFIG_DIR;

std::set<std::string> shipped_yaml_files() {
  std::set<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kConfigDir)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) {
      out.insert(entry.path().lexically_relative(kConfigDir).string());
    }
  }
  return out;
}

TEST(ShippedConfigs, TheDefaultAndOneExamplePerFilterAreShipped) {
  const auto files = shipped_yaml_files();
  for (const char* expected :
       {"sluice.yaml", "examples/fixed_semaphore.yaml", "examples/queue_wait_budget.yaml",
        "examples/rtt_gradient.yaml", "examples/aimd.yaml", "examples/tls.yaml",
        "examples/headless_service.yaml"}) {
    EXPECT_TRUE(files.count(expected)) << expected << " is missing from " << kConfigDir;
  }
}

TEST(ShippedConfigs, EveryShippedFileLoads) {
  const auto files = shipped_yaml_files();
  ASSERT_FALSE(files.empty());
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    try {
      load_config_file((kConfigDir / file).string(), builtin_filters());
    } catch (const ConfigError& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(ShippedConfigs, EachFilterExampleUsesItsFilter) {
  for (const char* type : {"fixed_semaphore", "queue_wait_budget", "rtt_gradient", "aimd"}) {
    SCOPED_TRACE(type);
    const Config c = load_config_file(
        (kConfigDir / "examples" / (std::string(type) + ".yaml")).string(), builtin_filters());
    const bool used = std::any_of(c.listeners.begin(), c.listeners.end(), [&](const auto& l) {
      return std::any_of(l.filters.begin(), l.filters.end(),
                         [&](const FilterConfig& f) { return f.type == type; });
    });
    EXPECT_TRUE(used);
  }
}

TEST(ShippedConfigs, HeadlessServiceExampleNamesItsEndpointAndChecksHealth) {
  const Config c = load_config_file((kConfigDir / "examples" / "headless_service.yaml").string(),
                                    builtin_filters());
  ASSERT_EQ(c.clusters.size(), 1u);
  EXPECT_EQ(c.clusters[0].endpoints.at(0).host, "orders-headless.shop.svc.cluster.local");
  ASSERT_TRUE(c.clusters[0].health_check.has_value());
  EXPECT_EQ(c.clusters[0].health_check->service, "shop.Orders");
}

TEST(ShippedConfigs, TlsExampleTurnsTlsOn) {
  const Config c =
      load_config_file((kConfigDir / "examples" / "tls.yaml").string(), builtin_filters());
  ASSERT_FALSE(c.listeners.empty());
  EXPECT_TRUE(c.listeners[0].tls.has_value());
}

// sluice.yaml claims to show every field at its default: hold it to that by comparing it with
// a config that states only what has no default.
TEST(ShippedConfigs, DefaultFileShowsTheDefaults) {
  Config shipped = load_config_file((kConfigDir / "sluice.yaml").string(), builtin_filters());
  ASSERT_EQ(shipped.listeners.size(), 1u);
  ASSERT_EQ(shipped.clusters.size(), 1u);
  const ListenerConfig& l = shipped.listeners[0];
  const ClusterConfig& c = shipped.clusters[0];
  std::string endpoints;
  for (const auto& e : c.endpoints) {
    endpoints += (endpoints.empty() ? "\"" : ", \"") + e.to_string() + "\"";
  }
  const Config bare = load_config_string("listeners:\n  - {name: " + l.name + ", address: \"" +
                                             l.address.to_string() + "\", cluster: " + l.cluster +
                                             "}\nclusters:\n  - {name: " + c.name +
                                             ", endpoints: [" + endpoints + "]}\n",
                                         "bare.yaml", builtin_filters());
  shipped.source_path.clear();
  EXPECT_EQ(boost::json::serialize(config_to_json(shipped)),
            boost::json::serialize(config_to_json(bare)));
}

}  // namespace
}  // namespace sluice
