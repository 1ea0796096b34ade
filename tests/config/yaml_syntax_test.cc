// Every kind of syntax error yaml-cpp 0.7's parser reports, through the loader: each names the
// file and a line:column, and those about a construct left open (a flow collection, a quoted
// scalar) point where it was opened and say where the parser gave up.
#include "src/config/yaml_syntax.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/config/config_test_util.h"

namespace sluice {
namespace {

struct Case {
  const char* yaml;
  int line;
  int column;
  const char* message;  // the whole message after "invalid YAML: " must contain it
};

void expect_all(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    EXPECT_TRUE(FailsAt(c.yaml, c.line, c.column, "", std::string("invalid YAML: ") + c.message))
        << "for:\n"
        << c.yaml;
  }
}

TEST(YamlSyntax, AnUnclosedFlowCollectionIsReportedWhereItWasOpened) {
  expect_all({
      {"workers: 1\ndrain_timeout: 1s\nlog_level: info\nadmin: {}\nlisteners: [a, b,\n", 5, 12,
       "flow sequence '[' started here is never closed (reached end of file at 6:1)"},
      {"clusters: [a\nworkers: 2\n", 1, 11,
       "flow sequence '[' started here is never closed (gave up at 2:8)"},
      {"admin: {address: x\n", 1, 8,
       "flow map '{' started here is never closed (reached end of file at 2:1)"},
      {"a: [b, {c: 1\n", 1, 8, "flow map '{' started here is never closed"},
  });
}

TEST(YamlSyntax, AClosingBracketThatClosesTheWrongThingNamesWhatIsOpen) {
  expect_all({
      {"a: [1}\n", 1, 6, "'}' does not close the flow sequence '[' opened at 1:4"},
      {"a: {b: [1}\n", 1, 10, "'}' does not close the flow sequence '[' opened at 1:8"},
      {"a: ]\n", 1, 4, "']' closes nothing: no flow collection is open here"},
  });
}

TEST(YamlSyntax, AnUnclosedQuoteIsReportedWhereItWasOpened) {
  expect_all({
      {"a: 'x", 1, 4, "quoted scalar started here is never closed (reached end of file at 1:6)"},
      {"a: [b, \"c", 1, 8, "quoted scalar started here is never closed"},
      {"a: \"x\n---\n\"\n", 1, 4,
       "quoted scalar started here is never closed (a document marker is inside it at 2:1)"},
      // yaml-cpp 0.7 itself accepts these: the rest of the file would be the value.
      {"workers: 1\nlog_level: \"info\nadmin: {}\n", 2, 12,
       "quoted scalar started here is never closed (reached end of file at 4:1)"},
      {"log_level: 'it''s\nworkers: 1\n", 1, 12, "quoted scalar started here is never closed"},
  });
}

TEST(YamlSyntax, ABrokenBlockCollectionNamesWhereItStarts) {
  expect_all({
      {"a:\n  - 1\n  b: 2\n", 3, 3,
       "end of map not found: what is here does not fit the block map that starts at 1:1"},
      {"a: 1\n- b\n", 2, 1, "end of map not found"},
      {"a: \"x\"y\n", 1, 7,
       "end of map not found: what is here does not fit the block map that starts at 1:1 (wrong "
       "indentation, or text after a value)"},
      {"- - a\n  b: c\n", 2, 3,
       "end of sequence not found: what is here does not fit the block sequence that starts at "
       "1:1"},
  });
}

TEST(YamlSyntax, EveryOtherParserErrorKeepsTheParsersPositionAndWords) {
  expect_all({
      {"%YAML 1.2 3\n---\na: 1\n", 1, 1, "YAML directives must have exactly one argument"},
      {"%YAML x\n---\na: 1\n", 1, 1, "bad YAML version: x"},
      {"%YAML 2.0\n---\na: 1\n", 1, 1, "YAML major version too large"},
      {"%YAML 1.2\n%YAML 1.2\n---\na: 1\n", 2, 1, "repeated YAML directive"},
      {"%TAG !a!\n---\na: 1\n", 1, 1, "TAG directives must have exactly two arguments"},
      {"%TAG !a! x\n%TAG !a! x\n---\na: 1\n", 2, 1, "repeated TAG directive"},
      {"a: !<abc 1\n", 1, 9, "end of verbatim tag not found"},
      {"a: !! 1\n", 1, 6, "tag handle with no suffix"},
      {"a: !x !y 1\n", 1, 7, "cannot assign multiple tags to the same node"},
      {"a: &x &y 1\n", 1, 7, "cannot assign multiple anchors to the same node"},
      {"a: `x\n", 1, 4, "unknown token"},
      {"a: 1\n\tb: 2\n", 2, 1, "illegal tab when looking for indentation"},
      {"a:\n\t- 1\n", 2, 2, "illegal block entry"},
      {"a: b: c\n", 1, 5, "illegal map value"},
      {"a: *\n", 1, 5, "alias not found after *"},
      {"a: &\n", 1, 5, "anchor not found after &"},
      {"a: &x{ 1\n", 1, 6, "illegal character found while scanning anchor"},
      {"a: *x\n", 1, 4, "the referenced anchor is not defined"},
      {"a: |0\n  x\n", 1, 6, "cannot set zero indentation for a block scalar"},
      {"a: |x\n  x\n", 1, 5, "unexpected character in block scalar"},
      {"a: \"\\x4g\"\n", 1, 9, "bad character found while scanning hex number"},
      {"a: \"\\q\"\n", 1, 7, "unknown escape character: q"},
      {"a: \"\\U0011FFFF\"\n", 1, 15, "invalid unicode: 1179647"},
  });
}

TEST(YamlSyntax, ValidQuotingIsNotMistakenForAnUnclosedQuote) {
  const std::string yaml = std::string(kMinimal) +
                           "log_level: 'info'  # it's fine\n"
                           "drain_timeout: \"5s\"\n";
  EXPECT_FALSE(load_error(yaml)) << load_error(yaml)->what();
}

}  // namespace
}  // namespace sluice
