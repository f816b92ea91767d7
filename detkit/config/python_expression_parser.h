#pragma once
// The parsing half of the `!!python/object/apply:eval` evaluator (python_expression.h): a
// tokenizer and a recursive-descent parser that turn the expression into a small tree, refusing
// by name and column whatever is not in the accepted subset. Internal to detkit/config.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "detkit/config/cfg_value.h"

namespace detkit::config::python_expression {

constexpr size_t kMaxNesting = 100;           // brackets, unary signs and ** chains together
constexpr size_t kMaxStringLength = 1 << 16;  // characters of any string built

/// What is accepted, for messages.
extern const char* const kAccepted;

/// Throws detkit::Error("at column N: what").
[[noreturn]] void refuse(size_t column, const std::string& what);

/// Digits with Python's underscores (each between two digits) without them; false when malformed.
bool strip_underscores(const std::string& digits, std::string& out);

struct Node {
  enum class Kind { Constant, Name, List, Tuple, Comprehension, Unary, Binary, Call };
  Kind kind = Kind::Constant;
  size_t column = 0;
  std::string text;  // operator, name or called function
  CfgValue constant;
  std::vector<std::unique_ptr<Node>> items;  // items, operands, arguments; comprehension: element
  std::vector<std::string> loop_names;       // comprehension: `for NAME in` ...
  std::vector<std::unique_ptr<Node>> loop_iterables;
  bool generator = false;  // (x for x in ...) rather than [x for x in ...]
};
using NodePtr = std::unique_ptr<Node>;

/// The tree of `expression`; throws detkit::Error naming the first token refused.
NodePtr parse(const std::string& expression);

}  // namespace detkit::config::python_expression
