#include <gtest/gtest.h>

#include "detkit/config/cfg_value.h"

namespace detkit::config {

TEST(CfgValue, ParseLiteralReadsPythonLiterals) {
  EXPECT_EQ(parse_literal("0.02"), CfgValue(0.02));
  EXPECT_EQ(parse_literal("16"), CfgValue(16));
  EXPECT_EQ(parse_literal("-1"), CfgValue(-1));
  EXPECT_EQ(parse_literal("True"), CfgValue(true));
  EXPECT_EQ(parse_literal("None"), CfgValue());
  EXPECT_EQ(parse_literal("'abc'"), CfgValue("abc"));
  EXPECT_EQ(parse_literal("coco_2017_val"), CfgValue("coco_2017_val"));
  EXPECT_EQ(parse_literal("(640, 672, 704)").as_int_list(), (std::vector<int64_t>{640, 672, 704}));
  EXPECT_EQ(parse_literal("(800,)").as_int_list(), (std::vector<int64_t>{800}));
  // Parentheses without a comma make no tuple in Python: (800) is 800, [800] a list.
  EXPECT_EQ(parse_literal("(800)"), CfgValue(800));
  EXPECT_EQ(parse_literal("((1, 2))").as_int_list(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(parse_literal("[800]").as_int_list(), (std::vector<int64_t>{800}));
  EXPECT_EQ(parse_literal("('a', \"b\")").as_string_list(), (std::vector<std::string>{"a", "b"}));
  auto nested = parse_literal("[[32], [64, 128]]").as_int_list_list();
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_EQ(nested[1], (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(parse_literal("[]").as_list().size(), 0u);
  // Not a literal: the raw text, as Detectron2 keeps it.
  EXPECT_EQ(parse_literal("(a, b)"), CfgValue("(a, b)"));
  EXPECT_EQ(parse_literal("[1, 2"), CfgValue("[1, 2"));
  EXPECT_EQ(parse_literal("./output/run1"), CfgValue("./output/run1"));
}

TEST(CfgValue, FormatFloatIsShortestAndReadsBackAsFloat) {
  EXPECT_EQ(format_float(0.02), "0.02");
  EXPECT_EQ(format_float(1.0), "1.0");
  EXPECT_EQ(format_float(0.0001), "0.0001");
  EXPECT_EQ(format_float(1e-10), "1.0e-10");
  EXPECT_EQ(format_float(123.675), "123.675");
  EXPECT_EQ(format_float(1.0 / 1000), "0.001");
  EXPECT_EQ(format_float(1e20), "1.0e+20");
  EXPECT_EQ(format_float(10.0), "10.0");
  EXPECT_EQ(format_float(123456.0), "123456.0");
  EXPECT_EQ(format_float(1e16), "1.0e+16");
  EXPECT_EQ(format_float(-0.5), "-0.5");
  for (double v : {0.1, 1.0 / 3, 57.12, 6.02e23, -2.5e-7}) {
    EXPECT_EQ(std::stod(format_float(v)), v) << format_float(v);
  }
}

TEST(CfgValue, TypedAccessRefusesOtherKinds) {
  CfgValue v("abc");
  EXPECT_THROW(v.as_int(), std::exception);
  EXPECT_EQ(CfgValue(3).as_float(), 3.0);  // ints widen
  EXPECT_THROW(CfgValue(3.5).as_int(), std::exception);
  EXPECT_EQ(parse_literal("[1, 'x']").repr(), "[1, 'x']");
}

}  // namespace detkit::config
