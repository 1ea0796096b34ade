#include "src/admin/json_pretty.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>

namespace sluice {
namespace {

TEST(JsonPrettyTest, IndentsNestedContainersAndParsesBack) {
  const boost::json::value v =
      boost::json::parse(R"({"a":1,"b":[true,null,"x\"y"],"c":{},"d":[],"e":{"f":{"g":2.5}}})");
  const std::string text = pretty_json(v);
  EXPECT_EQ(text,
            "{\n"
            "  \"a\": 1,\n"
            "  \"b\": [\n"
            "    true,\n"
            "    null,\n"
            "    \"x\\\"y\"\n"
            "  ],\n"
            "  \"c\": {},\n"
            "  \"d\": [],\n"
            "  \"e\": {\n"
            "    \"f\": {\n"
            "      \"g\": 2.5\n"
            "    }\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(boost::json::parse(text), v);
}

TEST(JsonPrettyTest, DoublesUseShortestFormAndNonFiniteBecomesNull) {
  boost::json::array a{0.8, 1e-7, 2.0, 1e300, std::nan(""), HUGE_VAL};
  EXPECT_EQ(pretty_json(a), "[\n  0.8,\n  1e-07,\n  2,\n  1e+300,\n  null,\n  null\n]\n");
}

TEST(JsonPrettyTest, EscapesKeys) {
  boost::json::object o;
  o["we\"ird\n"] = 1;
  EXPECT_EQ(boost::json::parse(pretty_json(o)), boost::json::value(o));
}

}  // namespace
}  // namespace sluice
