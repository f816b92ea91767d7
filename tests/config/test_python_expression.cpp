// detkit's restricted evaluator of `!!python/object/apply:eval` expressions against Python's own
// eval (the oracle Python, run once over every expression): the same types and the same bits;
// and every refusal named with its token and column.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "detkit/config/python_expression.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::config {
namespace {

using detkit::testing::error_of;
using detkit::testing::expect_contains;

// Python expressions the evaluator accepts, with Python's results as the expected values.
const std::vector<std::string> kAccepted = {
    "[[x, x * 2**(1.0/3), x * 2**(2.0/3) ] for x in [32, 64, 128, 256, 512 ]]",
    "[int(x * 0.1 * 640) for x in range(5, 16)]",
    "7 / 2",
    "-7 // 2",
    "-7 % 3",
    "7 % -3",
    "7.5 // -2",
    "-7.5 % 2",
    "-0.0 % 5",
    "-7.0 // 2",
    "1e308 * 10",
    "-1e308 * 10",
    "2 ** -2",
    "-2 ** 2",
    "(-8) ** 2",
    "(-8.0) ** 3",
    "2 ** 0.5",
    "10 ** 18",
    "0 ** 0",
    "0.0 ** 0",
    "2 ** 62 + (2 ** 62 - 1)",
    "-(2 ** 62) * 2",
    "9007199254740993 / 3",
    "9223372036854775807 / 7",
    "int(1e18)",
    "7 // 2.0",
    "(1/3) * 3",
    "0.1 + 0.2",
    "2 ** (1.0/3)",
    "1 - -1",
    "- - 3",
    "+True",
    "int(-2.7)",
    "int(True)",
    "float(3)",
    "abs(-3)",
    "abs(-2.5)",
    "min(3, 1.0)",
    "max([2, 5, 1])",
    "max(1, 1.0)",
    "min(1.0, 1)",
    "len('ab' * 3)",
    "float('inf')",
    "float(' -1e3 ')",
    "float('1_0.5')",
    "[0] * 4",
    "3 * (1, 2)",
    "[1] * -2",
    "'a' + 'b'",
    "None",
    "True + 1",
    "False",
    "list(x for x in range(3))",
    "tuple(range(10, 0, -3))",
    "list(range(-5, 5, 4))",
    "[x * y for x in range(3) for y in [x, 10]]",
    "[[i * 0.1 for i in range(3)] for j in (1, 2)]",
    "[y for x in [[1, 2], [3]] for y in x]",
    "1_000_000 + 0x_ff + 0o17 + 0b101 + 0XfF",
    ".5 + 5. + 1e-3 + 1E+2 + 1_0.0_1",
    "1, 2",
    "(1,)",
    "()",
    "[]",
    "[1, 2,]",
    "(3)",
    "'it\\'s' + \"a\\tb\"",
    "len([])",
    "5 % 3.5",
    "-5 // 3.5",
    "[x for x in (1.5, -2)] + [len(range(7))]",
    "(2 ** 0.5) ** 2",
    "1e-320 / 10",
    "(((((((1 + 2)))))))",
    "max(-0.0, 0.0)",
    "-2 ** -1",
};

// The oracle's view of a value, with Python's types: ["int", "32"], ["float", repr], ["bool", b],
// ["none"], ["str", s], ["list" or "tuple", [...]].
const char* kOracleScript = R"PY(
import json, sys
def enc(v):
    if isinstance(v, bool): return ["bool", v]
    if isinstance(v, int): return ["int", str(v)]
    if isinstance(v, float): return ["float", repr(v)]
    if v is None: return ["none"]
    if isinstance(v, str): return ["str", v]
    if isinstance(v, (list, tuple)): return [type(v).__name__, [enc(x) for x in v]]
    raise TypeError(type(v))
exprs = json.load(open(sys.argv[1]))
json.dump([enc(eval(e, {"__builtins__": {}, "range": range, "int": int, "float": float,
    "list": list, "tuple": tuple, "abs": abs, "min": min, "max": max, "len": len}))
    for e in exprs], open(sys.argv[2], "w"))
)PY";

// Compares detkit's value with the oracle's; lists and tuples are both lists in a config.
void compare(const CfgValue& got, const nlohmann::json& want, const std::string& where,
             std::vector<std::string>& mismatches, double& largest_difference) {
  const std::string type = want[0].get<std::string>();
  auto mismatch = [&](const std::string& what) {
    mismatches.push_back(where + ": " + what + " (detkit " + got.repr() + ", Python " +
                         want.dump() + ")");
  };
  if (type == "list" || type == "tuple") {
    if (got.kind() != CfgValue::Kind::List) return mismatch("not a list");
    const auto& items = want[1];
    if (got.as_list().size() != items.size()) return mismatch("length differs");
    for (size_t i = 0; i < items.size(); ++i)
      compare(got.as_list()[i], items[i], where + "[" + std::to_string(i) + "]", mismatches,
              largest_difference);
    return;
  }
  if (type == "int") {
    if (got.kind() != CfgValue::Kind::Int) return mismatch("not an int");
    if (std::to_string(got.as_int()) != want[1].get<std::string>()) mismatch("value differs");
    return;
  }
  if (type == "float") {
    if (got.kind() != CfgValue::Kind::Float) return mismatch("not a float");
    const double expected = std::strtod(want[1].get<std::string>().c_str(), nullptr);
    const double value = got.as_float();
    if (std::isnan(expected) && std::isnan(value)) return;
    if (std::memcmp(&expected, &value, sizeof(double)) != 0) {
      if (std::isfinite(expected) && std::isfinite(value))
        largest_difference = std::max(largest_difference, std::fabs(expected - value));
      mismatch("bits differ");
    }
    return;
  }
  if (type == "bool") {
    if (got.kind() != CfgValue::Kind::Bool || got.as_bool() != want[1].get<bool>())
      mismatch("bool differs");
    return;
  }
  if (type == "none") {
    if (!got.is_null()) mismatch("not None");
    return;
  }
  if (got.kind() != CfgValue::Kind::String || got.as_string() != want[1].get<std::string>())
    mismatch("string differs");
}

}  // namespace

TEST(PythonExpression, EqualsPythonsEvalInTypeAndBits) {
  const std::string python = DETKIT_ORACLE_PYTHON;
  if (python.empty()) GTEST_SKIP() << "no oracle Python (DETKIT_ORACLE_PYTHON) to run eval";
  detkit::testing::TempDir dir("python_expression");
  std::ofstream(dir.path("exprs.json")) << nlohmann::json(kAccepted).dump();
  std::ofstream(dir.path("oracle.py")) << kOracleScript;
  const std::string command = "'" + python + "' '" + dir.path("oracle.py") + "' '" +
                              dir.path("exprs.json") + "' '" + dir.path("values.json") + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const nlohmann::json expected = nlohmann::json::parse(std::ifstream(dir.path("values.json")));
  ASSERT_EQ(expected.size(), kAccepted.size());
  std::vector<std::string> mismatches;
  double largest_difference = 0.0;
  for (size_t i = 0; i < kAccepted.size(); ++i) {
    CfgValue got;
    try {
      got = eval_python_expression(kAccepted[i], 10000);
    } catch (const Error& e) {
      mismatches.push_back(kAccepted[i] + ": refused: " + e.what());
      continue;
    }
    compare(got, expected[i], kAccepted[i], mismatches, largest_difference);
  }
  std::cout << kAccepted.size() << " expressions against Python's eval; largest float difference "
            << largest_difference << ", " << mismatches.size() << " mismatches\n";
  for (const auto& m : mismatches) ADD_FAILURE() << m;
}

TEST(PythonExpression, RefusesWhatIsNotArithmeticNamingTheToken) {
  auto refused = [](const std::string& expression) {
    return error_of([&] { eval_python_expression(expression, 10000); });
  };
  expect_contains(refused("__import__('os')"), "at column 1: call of '__import__' refused");
  expect_contains(refused("__import__('os').system('ls')"), "at column 17: attribute access");
  expect_contains(refused("[].__class__"), "at column 3: attribute access ('.') refused");
  expect_contains(refused("open('/etc/passwd')"), "call of 'open' refused");
  expect_contains(refused("(1).__class__"), "at column 4: attribute access ('.') refused");
  expect_contains(refused("lambda: 1"), "'lambda' refused");
  expect_contains(refused("[x for x in range(3) if x]"),
                  "at column 22: 'if' in a comprehension is refused");
  expect_contains(refused("1 if 2 else 3"), "at column 3: 'if' refused");
  expect_contains(refused("1 + x"), "at column 5: name 'x' is not defined");
  expect_contains(refused("range"), "'range' is only accepted as a call");
  expect_contains(refused("{1: 2}"), "at column 1: '{' refused");
  expect_contains(refused("1 < 2"), "'<' refused");
  expect_contains(refused("f'{x}'"), "string prefix 'f' refused");
  expect_contains(refused("[x for x, y in [(1, 2)]]"), "unpacking in a 'for' clause is refused");
  expect_contains(refused("int('3')"), "int() of a 'str' refused");
  expect_contains(refused("[1] + (2,)"), "unsupported operand types for +: 'list' and 'tuple'");
  expect_contains(refused("range(5)"), "a range object is not a config value");
  expect_contains(refused("(x for x in [1])"), "a generator object is not a config value");
  expect_contains(refused("len(3)"), "object of type 'int' has no len()");
  expect_contains(refused("min()"), "min() takes a list or two or more numbers");
  expect_contains(refused("range(1, 2, 0)"), "range() arg 3 must not be zero");
  // Python's own errors, by Python's names.
  expect_contains(refused("1 / 0"), "at column 3: ZeroDivisionError: division by zero");
  expect_contains(refused("1.0 % 0"), "ZeroDivisionError: float division by zero");
  expect_contains(refused("0 ** -1"), "ZeroDivisionError");
  expect_contains(refused("(-8) ** (1/3)"), "complex; refused");
  expect_contains(refused("1e308 ** 2"), "OverflowError");
  expect_contains(refused("int(float('nan'))"), "cannot convert float NaN to integer");
  expect_contains(refused("float('0x10')"), "could not convert string to float");
  // Syntax Python refuses too.
  expect_contains(refused("01"), "leading zeros");
  expect_contains(refused("1j"), "complex number '1j' refused");
  expect_contains(refused("1__0"), "malformed number '1__0'");
  expect_contains(refused("0b102"), "malformed number '0b102'");
  expect_contains(refused("[1, 2"), "unexpected end of the expression; expected ']'");
  expect_contains(refused("(1 2)"), "at column 4: unexpected '2'");
  expect_contains(refused("'abc"), "unterminated string");
  expect_contains(refused(""), "unexpected end of the expression");
  // What Python would hold as a bignum, and the limits.
  expect_contains(refused("2 ** 63"), "does not fit in 64 bits");
  expect_contains(refused("9223372036854775808"), "does not fit in 64 bits");
  expect_contains(refused("2 ** 2 ** 2 ** 2 ** 2 ** 2"), "does not fit in 64 bits");
  expect_contains(refused("range(10 ** 9)"), "range() of more than 9999 values");
  expect_contains(refused("[[y for y in range(9999)] for x in range(9999)]"),
                  "more than 10000 values");
  expect_contains(refused("[0] * 10 ** 6"), "more than 10000 values");
  expect_contains(refused("'ab' * 10 ** 9"), "a string longer than");
  expect_contains(refused(std::string(200, '(') + "1" + std::string(200, ')')),
                  "nested more than 100 levels");
  expect_contains(refused(std::string(300, '-') + "1"), "nested more than 100 levels");
  expect_contains(refused("[[x for x in range(999)] for y in range(999)][0]"), "unexpected '['");
}

TEST(PythonExpression, CountsEveryNestedValueAgainstTheLimit) {
  // 1 outer list + 5 inner lists + 15 numbers.
  const std::string sizes = "[[x, x * 2, x * 3] for x in [32, 64, 128, 256, 512]]";
  EXPECT_EQ(eval_python_expression(sizes, 21).as_list().size(), 5u);
  expect_contains(error_of([&] { eval_python_expression(sizes, 20); }), "more than 20 values");
}

}  // namespace detkit::config
