// The evaluating half of the restricted evaluator for Detectron2's `!!python/object/apply:eval`
// YAML tags: the parser's tree (python_expression_parser.h) evaluated with Python's numeric
// semantics over CfgValues. Nothing it reads can name a file, a module or an attribute; every
// list it builds and every step it takes is counted against a limit.
#include "detkit/config/python_expression.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "detkit/config/python_expression_parser.h"
#include "detkit/utils/error.h"

namespace detkit::config {
namespace {

using python_expression::kAccepted;
using python_expression::kMaxStringLength;
using python_expression::Node;
using python_expression::NodePtr;
using python_expression::refuse;
using python_expression::strip_underscores;

constexpr size_t kMaxSteps = 1000000;  // evaluations of tree nodes, loops included

// A value during evaluation: lists and tuples are CfgValue lists, ranges and generators too,
// remembered as such (they may be iterated or given to list()/tuple(), never be a config value).
struct Value {
  enum class Seq { None, List, Tuple, Range, Generator };
  CfgValue v;
  Seq seq = Seq::None;
};

const char* type_name(const Value& x) {
  switch (x.seq) {
    case Value::Seq::List:
      return "list";
    case Value::Seq::Tuple:
      return "tuple";
    case Value::Seq::Range:
      return "range";
    case Value::Seq::Generator:
      return "generator";
    case Value::Seq::None:
      break;
  }
  switch (x.v.kind()) {
    case CfgValue::Kind::Null:
      return "NoneType";
    case CfgValue::Kind::Bool:
      return "bool";
    case CfgValue::Kind::Int:
      return "int";
    case CfgValue::Kind::Float:
      return "float";
    case CfgValue::Kind::String:
      return "str";
    case CfgValue::Kind::List:
      return "list";
  }
  return "?";
}

bool is_int(const Value& x) {  // Python's bool is an int
  return x.seq == Value::Seq::None &&
         (x.v.kind() == CfgValue::Kind::Int || x.v.kind() == CfgValue::Kind::Bool);
}
bool is_number(const Value& x) {
  return is_int(x) || (x.seq == Value::Seq::None && x.v.kind() == CfgValue::Kind::Float);
}
bool is_sequence(const Value& x) { return x.seq != Value::Seq::None; }
int64_t int_of(const Value& x) {
  return x.v.kind() == CfgValue::Kind::Bool ? (x.v.as_bool() ? 1 : 0) : x.v.as_int();
}
double float_of(const Value& x) {
  return x.v.kind() == CfgValue::Kind::Float ? x.v.as_float() : static_cast<double>(int_of(x));
}
// A CfgValue taken out of a list (a comprehension variable, an item): a list stays a list.
Value value_of(const CfgValue& v) {
  return Value{v, v.kind() == CfgValue::Kind::List ? Value::Seq::List : Value::Seq::None};
}
Value number(int64_t v) { return Value{CfgValue(v), Value::Seq::None}; }
Value number(double v) { return Value{CfgValue(v), Value::Seq::None}; }

class Evaluator {
 public:
  explicit Evaluator(size_t max_values) : max_values_(max_values) {}

  Value eval(const Node& n) {
    if (steps_++ == kMaxSteps)
      refuse(n.column, "more than " + std::to_string(kMaxSteps) + " evaluation steps; refused");
    switch (n.kind) {
      case Node::Kind::Constant:
        return value_of(n.constant);
      case Node::Kind::Name:
        return lookup(n);
      case Node::Kind::List:
      case Node::Kind::Tuple: {
        std::vector<CfgValue> items;
        for (const auto& item : n.items) items.push_back(element(*item));
        return sequence(std::move(items),
                        n.kind == Node::Kind::List ? Value::Seq::List : Value::Seq::Tuple,
                        n.column);
      }
      case Node::Kind::Comprehension: {
        std::vector<CfgValue> items;
        size_t values = 0;
        loop(n, 0, items, values);
        return sequence(std::move(items), n.generator ? Value::Seq::Generator : Value::Seq::List,
                        n.column);
      }
      case Node::Kind::Unary:
        return unary(n);
      case Node::Kind::Binary:
        return binary(n.text, eval(*n.items[0]), eval(*n.items[1]), n.column);
      case Node::Kind::Call:
        return call(n);
    }
    refuse(n.column, "unknown expression");
  }

  // A value that may sit inside a list: a number, string, None, bool or list/tuple.
  CfgValue element(const Node& n) {
    Value v = eval(n);
    if (v.seq == Value::Seq::Range || v.seq == Value::Seq::Generator)
      refuse(n.column, std::string("a ") + type_name(v) +
                           " object is not a config value (list(...) or tuple(...) makes one)");
    return std::move(v.v);
  }

 private:
  Value sequence(std::vector<CfgValue> items, Value::Seq seq, size_t column) {
    CfgValue list = CfgValue::list(std::move(items));
    if (count_values(list) > max_values_)
      refuse(column, "a list of more than " + std::to_string(max_values_) + " values; refused");
    return Value{std::move(list), seq};
  }

  Value lookup(const Node& n) {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
      if (it->first == n.text) return value_of(it->second);
    if (is_builtin(n.text))
      refuse(n.column, "'" + n.text + "' is only accepted as a call, " + n.text + "(...)");
    refuse(n.column, "name '" + n.text + "' is not defined; " + kAccepted);
  }

  static bool is_builtin(const std::string& name) {
    for (const char* b : {"range", "int", "float", "list", "tuple", "abs", "min", "max", "len"})
      if (name == b) return true;
    return false;
  }

  void loop(const Node& n, size_t level, std::vector<CfgValue>& out, size_t& values) {
    if (level == n.loop_names.size()) {
      out.push_back(element(*n.items[0]));
      values += count_values(out.back());
      if (values > max_values_)
        refuse(n.column, "a list of more than " + std::to_string(max_values_) + " values; refused");
      return;
    }
    const Node& iterable_node = *n.loop_iterables[level];
    const Value iterable = eval(iterable_node);
    if (!is_sequence(iterable))
      refuse(iterable_node.column, std::string("'") + type_name(iterable) +
                                       "' is not iterable here (lists, tuples and ranges are)");
    for (const CfgValue& item : iterable.v.as_list()) {
      scope_.emplace_back(n.loop_names[level], item);
      loop(n, level + 1, out, values);
      scope_.pop_back();
    }
  }

  Value unary(const Node& n) {
    const Value x = eval(*n.items[0]);
    if (!is_number(x))
      refuse(n.column, "bad operand type for unary " + n.text + ": '" + type_name(x) + "'");
    if (n.text == "+") return is_int(x) ? number(int_of(x)) : x;
    if (is_int(x)) {
      const int64_t v = int_of(x);
      if (v == std::numeric_limits<int64_t>::min())
        refuse(n.column, "integer result does not fit in 64 bits");
      return number(-v);
    }
    return number(-float_of(x));
  }

  // Call as checked(__builtin_*_overflow(..., &r), r): `overflow` is computed before `result` is
  // read.
  static Value checked(bool overflow, const int64_t& result, size_t column) {
    if (overflow)
      refuse(column,
             "integer result does not fit in 64 bits (Python would hold it; detkit refuses)");
    return number(result);
  }

  static Value int_power(int64_t base, int64_t exponent, size_t column) {
    int64_t result = 1;
    bool overflow = false;
    while (exponent > 0) {
      if (exponent & 1) overflow |= __builtin_mul_overflow(result, base, &result);
      exponent >>= 1;
      if (exponent > 0) overflow |= __builtin_mul_overflow(base, base, &base);
      if (overflow) break;
    }
    return checked(overflow, result, column);
  }

  // Python's float ** float (float_pow): the cases it refuses are refused here too.
  static Value float_power(double a, double b, size_t column) {
    if (b == 0.0) return number(1.0);
    if (std::isnan(a)) return number(a);
    if (std::isnan(b)) return number(a == 1.0 ? 1.0 : b);
    if (a == 0.0 && b < 0.0 && std::isfinite(b))
      refuse(column, "ZeroDivisionError: 0.0 cannot be raised to a negative power");
    if (a < 0.0 && std::isfinite(a) && std::isfinite(b) && std::floor(b) != b)
      refuse(column, "a negative number to a fractional power is complex; refused");
    const double r = std::pow(a, b);
    if (std::isinf(r) && std::isfinite(a) && std::isfinite(b))
      refuse(column, "OverflowError: float power out of range");
    return number(r);
  }

  Value repeat(const Value& seq, int64_t times, size_t column) {
    std::vector<CfgValue> items;
    if (times > 0) {
      const size_t per = count_values(seq.v) - (seq.v.kind() == CfgValue::Kind::List ? 1 : 0);
      if (per > 0 && static_cast<uint64_t>(times) > max_values_ / per)
        refuse(column, "a list of more than " + std::to_string(max_values_) + " values; refused");
      for (int64_t i = 0; i < times; ++i)
        for (const auto& item : seq.v.as_list()) items.push_back(item);
    }
    return sequence(std::move(items), seq.seq, column);
  }

  Value string_repeat(const std::string& s, int64_t times, size_t column) {
    if (times <= 0 || s.empty()) return Value{CfgValue(std::string()), Value::Seq::None};
    if (static_cast<uint64_t>(times) > kMaxStringLength / s.size())
      refuse(column,
             "a string longer than " + std::to_string(kMaxStringLength) + " characters; refused");
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value{CfgValue(std::move(out)), Value::Seq::None};
  }

  Value binary(const std::string& op, const Value& a, const Value& b, size_t column) {
    const bool a_str = a.seq == Value::Seq::None && a.v.kind() == CfgValue::Kind::String;
    const bool b_str = b.seq == Value::Seq::None && b.v.kind() == CfgValue::Kind::String;
    const bool a_list = a.seq == Value::Seq::List || a.seq == Value::Seq::Tuple;
    const bool b_list = b.seq == Value::Seq::List || b.seq == Value::Seq::Tuple;
    if (op == "+" && a_list && b_list && a.seq == b.seq) {
      std::vector<CfgValue> items = a.v.as_list();
      for (const auto& item : b.v.as_list()) items.push_back(item);
      return sequence(std::move(items), a.seq, column);
    }
    if (op == "+" && a_str && b_str) {
      if (a.v.as_string().size() + b.v.as_string().size() > kMaxStringLength)
        refuse(column,
               "a string longer than " + std::to_string(kMaxStringLength) + " characters; refused");
      return Value{CfgValue(a.v.as_string() + b.v.as_string()), Value::Seq::None};
    }
    if (op == "*" && a_list && is_int(b)) return repeat(a, int_of(b), column);
    if (op == "*" && is_int(a) && b_list) return repeat(b, int_of(a), column);
    if (op == "*" && a_str && is_int(b)) return string_repeat(a.v.as_string(), int_of(b), column);
    if (op == "*" && is_int(a) && b_str) return string_repeat(b.v.as_string(), int_of(a), column);
    if (!is_number(a) || !is_number(b))
      refuse(column, "unsupported operand types for " + op + ": '" + type_name(a) + "' and '" +
                         type_name(b) + "'");
    if (is_int(a) && is_int(b)) {
      const int64_t x = int_of(a), y = int_of(b);
      int64_t r = 0;
      if (op == "+") return checked(__builtin_add_overflow(x, y, &r), r, column);
      if (op == "-") return checked(__builtin_sub_overflow(x, y, &r), r, column);
      if (op == "*") return checked(__builtin_mul_overflow(x, y, &r), r, column);
      if (op == "**") {
        if (y >= 0) return int_power(x, y, column);
        if (x == 0) refuse(column, "ZeroDivisionError: 0.0 cannot be raised to a negative power");
        return float_power(static_cast<double>(x), static_cast<double>(y), column);
      }
      if (y == 0) refuse(column, "ZeroDivisionError: division by zero");
      if (op == "/") {
        // Exact operands (|v| <= 2^53) give Python's correctly rounded quotient; wider ones are
        // divided in long double (64-bit mantissa) first.
        constexpr int64_t kExact = int64_t{1} << 53;
        if (x >= -kExact && x <= kExact && y >= -kExact && y <= kExact)
          return number(static_cast<double>(x) / static_cast<double>(y));
        return number(
            static_cast<double>(static_cast<long double>(x) / static_cast<long double>(y)));
      }
      if (y == -1) {  // INT64_MIN // -1 overflows; anything % -1 is 0
        if (op == "%") return number(int64_t{0});
        return checked(__builtin_sub_overflow(int64_t{0}, x, &r), r, column);
      }
      if (op == "//") {
        int64_t q = x / y;
        if (x % y != 0 && ((x < 0) != (y < 0))) --q;
        return number(q);
      }
      int64_t m = x % y;  // op == "%"
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return number(m);
    }
    const double x = float_of(a), y = float_of(b);
    if (op == "+") return number(x + y);
    if (op == "-") return number(x - y);
    if (op == "*") return number(x * y);
    if (op == "**") return float_power(x, y, column);
    if (y == 0.0) refuse(column, "ZeroDivisionError: float division by zero");
    if (op == "/") return number(x / y);
    // Python's float divmod: the remainder takes the divisor's sign, the quotient is floored.
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0.0) {
      if ((y < 0) != (mod < 0)) {
        mod += y;
        div -= 1.0;
      }
    } else {
      mod = std::copysign(0.0, y);
    }
    if (op == "%") return number(mod);
    double floordiv = 0.0;
    if (div != 0.0) {
      floordiv = std::floor(div);
      if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
      floordiv = std::copysign(0.0, x / y);
    }
    return number(floordiv);
  }

  Value call(const Node& n) {
    const std::string& f = n.text;
    if (!is_builtin(f)) refuse(n.column, "call of '" + f + "' refused; " + kAccepted);
    std::vector<Value> args;
    for (const auto& arg : n.items) args.push_back(eval(*arg));
    auto arity = [&](size_t lo, size_t hi) {
      if (args.size() < lo || args.size() > hi)
        refuse(n.column, f + "() takes " +
                             (lo == hi ? std::to_string(lo)
                                       : std::to_string(lo) + " to " + std::to_string(hi)) +
                             " arguments, got " + std::to_string(args.size()));
    };
    if (f == "range") {
      arity(1, 3);
      for (const auto& a : args)
        if (!is_int(a))
          refuse(n.column, std::string("range() takes ints, got '") + type_name(a) + "'");
      const int64_t start = args.size() == 1 ? 0 : int_of(args[0]);
      const int64_t stop = args.size() == 1 ? int_of(args[0]) : int_of(args[1]);
      const int64_t step = args.size() == 3 ? int_of(args[2]) : 1;
      if (step == 0) refuse(n.column, "ValueError: range() arg 3 must not be zero");
      __int128 span =
          step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
      __int128 abs_step = step > 0 ? static_cast<__int128>(step) : -static_cast<__int128>(step);
      __int128 length = span <= 0 ? 0 : (span - 1) / abs_step + 1;
      if (length >= static_cast<__int128>(max_values_))
        refuse(n.column,
               "range() of more than " + std::to_string(max_values_ - 1) + " values; refused");
      std::vector<CfgValue> items;
      for (__int128 i = 0; i < length; ++i)
        items.emplace_back(static_cast<int64_t>(start + i * step));
      return sequence(std::move(items), Value::Seq::Range, n.column);
    }
    if (f == "list" || f == "tuple") {
      arity(0, 1);
      if (args.empty())
        return Value{CfgValue::list({}), f == "list" ? Value::Seq::List : Value::Seq::Tuple};
      if (!is_sequence(args[0]))
        refuse(n.column,
               f + "() of a '" + type_name(args[0]) + "' refused (lists, tuples and ranges only)");
      return Value{args[0].v, f == "list" ? Value::Seq::List : Value::Seq::Tuple};
    }
    if (f == "len") {
      arity(1, 1);
      if (is_sequence(args[0])) return number(static_cast<int64_t>(args[0].v.as_list().size()));
      if (args[0].seq == Value::Seq::None && args[0].v.kind() == CfgValue::Kind::String)
        return number(static_cast<int64_t>(args[0].v.as_string().size()));
      refuse(n.column, std::string("object of type '") + type_name(args[0]) + "' has no len()");
    }
    if (f == "min" || f == "max") {
      std::vector<Value> candidates;
      if (args.size() == 1 && is_sequence(args[0])) {
        for (const auto& item : args[0].v.as_list()) candidates.push_back(value_of(item));
        if (candidates.empty())
          refuse(n.column, "ValueError: " + f + "() arg is an empty sequence");
      } else {
        if (args.size() < 2) refuse(n.column, f + "() takes a list or two or more numbers");
        candidates = args;
      }
      size_t best = 0;
      for (size_t i = 0; i < candidates.size(); ++i) {
        if (!is_number(candidates[i]))
          refuse(n.column, f + "() of a '" + type_name(candidates[i]) + "' refused (numbers only)");
        // long double holds every int64 and every double exactly: Python's exact comparison.
        auto exact = [](const Value& v) {
          return is_int(v) ? static_cast<long double>(int_of(v))
                           : static_cast<long double>(float_of(v));
        };
        if (i > 0 && (f == "min" ? exact(candidates[i]) < exact(candidates[best])
                                 : exact(candidates[i]) > exact(candidates[best])))
          best = i;
      }
      return is_int(candidates[best]) ? number(int_of(candidates[best])) : candidates[best];
    }
    arity(1, 1);
    const Value& x = args[0];
    if (f == "abs") {
      if (!is_number(x))
        refuse(n.column, std::string("bad operand type for abs(): '") + type_name(x) + "'");
      if (!is_int(x)) return number(std::fabs(float_of(x)));
      const int64_t v = int_of(x);
      if (v == std::numeric_limits<int64_t>::min())
        refuse(n.column, "integer result does not fit in 64 bits");
      return number(v < 0 ? -v : v);
    }
    if (f == "int") {
      if (is_int(x)) return number(int_of(x));
      if (!is_number(x))
        refuse(n.column, std::string("int() of a '") + type_name(x) + "' refused (numbers only)");
      const double v = float_of(x);
      if (std::isnan(v)) refuse(n.column, "ValueError: cannot convert float NaN to integer");
      if (std::isinf(v))
        refuse(n.column, "OverflowError: cannot convert float infinity to integer");
      const double t = std::trunc(v);
      if (t < -9223372036854775808.0 || t >= 9223372036854775808.0)
        refuse(n.column, "integer result does not fit in 64 bits");
      return number(static_cast<int64_t>(t));
    }
    // float
    if (is_number(x)) return number(float_of(x));
    if (x.seq == Value::Seq::None && x.v.kind() == CfgValue::Kind::String)
      return float_from_string(x.v.as_string(), n.column);
    refuse(n.column, std::string("float() of a '") + type_name(x) + "' refused");
  }

  // float("1e-3"), float("inf"), float("-nan"): Python's accepted spellings, surrounding spaces
  // allowed; hexadecimal and other strtod extensions refused.
  static Value float_from_string(const std::string& s, size_t column) {
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    std::string t = s.substr(b, e - b);
    std::string body = t;
    double sign = 1.0;
    if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
      sign = body[0] == '-' ? -1.0 : 1.0;
      body.erase(0, 1);
    }
    std::string lower;
    for (char c : body) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "inf" || lower == "infinity") return number(sign * HUGE_VAL);
    if (lower == "nan") return number(std::copysign(std::nan(""), sign));
    bool digits_only =
        !body.empty() && (std::isdigit(static_cast<unsigned char>(body[0])) || body[0] == '.');
    for (char c : body)
      if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != 'E' &&
          c != '+' && c != '-' && c != '_')
        digits_only = false;
    std::string plain;
    if (digits_only && strip_underscores(body, plain)) {
      char* end = nullptr;
      const double v = std::strtod(plain.c_str(), &end);
      if (end == plain.c_str() + plain.size()) return number(sign * v);
    }
    refuse(column, "ValueError: could not convert string to float: '" + s + "'");
  }

  size_t max_values_;
  size_t steps_ = 0;
  std::vector<std::pair<std::string, CfgValue>> scope_;  // comprehension variables, innermost last
};

}  // namespace

CfgValue eval_python_expression(const std::string& expression, size_t max_values) {
  NodePtr tree = python_expression::parse(expression);
  Evaluator evaluator(max_values);
  CfgValue result = evaluator.element(*tree);
  if (count_values(result) > max_values)
    throw Error("the value holds more than " + std::to_string(max_values) + " values; refused");
  return result;
}

}  // namespace detkit::config
