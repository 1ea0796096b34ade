// listeners[].criticality: what the loader reads, how a request is classified with it, and
// where a bad entry is reported.
#include <gtest/gtest.h>

#include "src/config/config_loader.h"
#include "tests/config/config_test_util.h"

namespace sluice {
namespace {

// kMinimal with a criticality block; the block's first line is line 9.
std::string with_criticality(std::string_view block) {
  return std::string(kMinimal) + "    criticality:\n" + std::string(block);
}

CriticalityConfig load_criticality(std::string_view block) {
  const Config c = load_config_string(with_criticality(block), "t.yaml", builtin_filters());
  return c.listeners.at(0).criticality.value();
}

TEST(CriticalityConfig, AbsentMeansNoClassification) {
  const Config c = load_config_string(kMinimal, "t.yaml", builtin_filters());
  EXPECT_FALSE(c.listeners.at(0).criticality.has_value());
}

TEST(CriticalityConfig, EmptyMapTakesTheDefaults) {
  const Config c = load_config_string(std::string(kMinimal) + "    criticality: {}\n", "t.yaml",
                                      builtin_filters());
  ASSERT_TRUE(c.listeners.at(0).criticality.has_value());
  const CriticalityConfig& k = *c.listeners.at(0).criticality;
  EXPECT_EQ(k.header, "x-sluice-criticality");
  EXPECT_EQ(k.default_class, Criticality::Critical);
  EXPECT_TRUE(k.methods.empty());
}

TEST(CriticalityConfig, ReadsEveryField) {
  const CriticalityConfig k = load_criticality(R"(      header: X-Request-Priority
      default: sheddable_plus
      methods:
        - {match: /shop.Reports/Generate, criticality: sheddable}
        - {match: "/shop.Payments/*", criticality: critical_plus}
)");
  EXPECT_EQ(k.header, "x-request-priority") << "HTTP/2 header names are lower case";
  EXPECT_EQ(k.default_class, Criticality::SheddablePlus);
  ASSERT_EQ(k.methods.size(), 2u);
  EXPECT_EQ(k.methods[0].match, "/shop.Reports/Generate");
  EXPECT_EQ(k.methods[0].criticality, Criticality::Sheddable);
  EXPECT_EQ(k.methods[1].match, "/shop.Payments/*");
  EXPECT_EQ(k.methods[1].criticality, Criticality::CriticalPlus);
}

TEST(CriticalityConfig, HeaderThenFirstMatchingRuleThenDefault) {
  const CriticalityConfig k = load_criticality(R"(      default: sheddable_plus
      methods:
        - {match: /a.B/Exact, criticality: sheddable}
        - {match: "/a.B/*", criticality: critical_plus}
        - {match: /a.B/Late, criticality: sheddable}
)");
  bool invalid = false;
  EXPECT_EQ(k.classify("/a.B/Exact", std::nullopt, &invalid), Criticality::Sheddable);
  EXPECT_EQ(k.classify("/a.B/Late", std::nullopt, &invalid), Criticality::CriticalPlus)
      << "the first rule that matches wins, not the most specific";
  EXPECT_EQ(k.classify("/a.C/X", std::nullopt, &invalid), Criticality::SheddablePlus);
  EXPECT_EQ(k.classify("/a.B/Exact", "critical", &invalid), Criticality::Critical);
  EXPECT_EQ(k.classify("/a.C/X", "CRITICAL_PLUS", &invalid), Criticality::CriticalPlus)
      << "Google's enum spelling is accepted";
  EXPECT_FALSE(invalid);
}

TEST(CriticalityConfig, AnUnknownHeaderValueFallsBackAndIsReported) {
  const CriticalityConfig k =
      load_criticality("      methods: [{match: /a.B/C, criticality: sheddable}]\n");
  bool invalid = false;
  EXPECT_EQ(k.classify("/a.B/C", "urgent", &invalid), Criticality::Sheddable);
  EXPECT_TRUE(invalid);
  invalid = false;
  EXPECT_EQ(k.classify("/x.Y/Z", "", &invalid), Criticality::Critical);
  EXPECT_TRUE(invalid);
}

TEST(CriticalityConfig, PrefixRulesMatchOnlyWhatTheyStartWith) {
  const CriticalityConfig k =
      load_criticality("      methods: [{match: \"/a.B/*\", criticality: sheddable}]\n");
  EXPECT_EQ(k.classify("/a.B/", std::nullopt, nullptr), Criticality::Sheddable);
  EXPECT_EQ(k.classify("/a.B/Anything", std::nullopt, nullptr), Criticality::Sheddable);
  EXPECT_EQ(k.classify("/a.Bc/Anything", std::nullopt, nullptr), Criticality::Critical);
  EXPECT_EQ(k.classify("/a.B", std::nullopt, nullptr), Criticality::Critical);
}

// --- errors ---

TEST(CriticalityConfig, UnknownKeysAreNamed) {
  EXPECT_TRUE(FailsAt(with_criticality("      defualt: sheddable\n"), 9, 7,
                      "listeners[0].criticality.defualt",
                      "unknown key \"defualt\" (did you mean \"default\"?); allowed keys: header, "
                      "default, methods"));
  EXPECT_TRUE(FailsAt(with_criticality("      methods: [{match: /a.B/C, class: sheddable}]\n"), 9,
                      33, "listeners[0].criticality.methods[0].class",
                      "allowed keys: match, criticality"));
}

TEST(CriticalityConfig, ClassNamesAreChecked) {
  EXPECT_TRUE(
      FailsAt(with_criticality("      default: low\n"), 9, 16, "listeners[0].criticality.default",
              "must be one of sheddable|sheddable_plus|critical|critical_plus, got \"low\""));
  EXPECT_TRUE(FailsAt(with_criticality("      methods: [{match: /a.B/C, criticality: CRITICAL}]\n"),
                      9, 46, "listeners[0].criticality.methods[0].criticality",
                      "must be one of sheddable|"));
}

TEST(CriticalityConfig, RulesNeedAMatchAndAClass) {
  EXPECT_TRUE(FailsAt(with_criticality("      methods: [{criticality: sheddable}]\n"), 9, 17,
                      "listeners[0].criticality.methods[0].match", "is required"));
  EXPECT_TRUE(FailsAt(with_criticality("      methods: [{match: /a.B/C}]\n"), 9, 17,
                      "listeners[0].criticality.methods[0].criticality", "is required"));
}

TEST(CriticalityConfig, MatchesArePathsOrTrailingPrefixes) {
  const std::string rule = "a :path (\"/pkg.Service/Method\") or a prefix ending in '*'";
  EXPECT_TRUE(FailsAt(with_criticality("      methods: [{match: a.B/C, criticality: sheddable}]\n"),
                      9, 25, "listeners[0].criticality.methods[0].match",
                      "must be " + rule + ", got \"a.B/C\""));
  EXPECT_TRUE(
      FailsAt(with_criticality("      methods: [{match: \"/a.*/C\", criticality: sheddable}]\n"), 9,
              25, "listeners[0].criticality.methods[0].match", "must be " + rule));
  EXPECT_TRUE(FailsAt(with_criticality("      methods: [{match: \"\", criticality: sheddable}]\n"),
                      9, 25, "listeners[0].criticality.methods[0].match", "must be " + rule));
}

TEST(CriticalityConfig, MethodsMustBeAList) {
  EXPECT_TRUE(FailsAt(with_criticality("      methods: {match: /a.B/C}\n"), 9, 16,
                      "listeners[0].criticality.methods", "must be a list"));
}

}  // namespace
}  // namespace sluice
