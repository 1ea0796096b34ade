#include "src/config/config_error.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(ConfigError, WhatNamesFilePositionPathAndMessage) {
  const ConfigError e("sluice.yaml", 12, 7, "listeners[0].filters[1].max_concurrency",
                      "must be an integer >= 1, got \"abc\"");
  EXPECT_STREQ(e.what(),
               "sluice.yaml:12:7: at listeners[0].filters[1].max_concurrency: must be an integer "
               ">= 1, got \"abc\"");
  EXPECT_EQ(e.file(), "sluice.yaml");
  EXPECT_EQ(e.line(), 12);
  EXPECT_EQ(e.column(), 7);
  EXPECT_EQ(e.yaml_path(), "listeners[0].filters[1].max_concurrency");
  EXPECT_EQ(e.message(), "must be an integer >= 1, got \"abc\"");
}

TEST(ConfigError, OmitsThePathWhenThereIsNone) {
  const ConfigError e("a.yaml", 3, 4, "", "invalid YAML: illegal map value");
  EXPECT_STREQ(e.what(), "a.yaml:3:4: invalid YAML: illegal map value");
}

TEST(ConfigError, OmitsThePositionWhenUnknown) {
  const ConfigError e("/nope.yaml", 0, 0, "", "cannot read configuration file: No such file");
  EXPECT_STREQ(e.what(), "/nope.yaml: cannot read configuration file: No such file");
}

TEST(ConfigError, IsARuntimeError) {
  try {
    throw ConfigError("f", 1, 1, "p", "m");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "f:1:1: at p: m");
  }
}

}  // namespace
}  // namespace sluice
