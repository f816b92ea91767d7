#pragma once
// The Python expressions of Detectron2's YAML `!!python/object/apply:eval ["..."]` tags, evaluated
// by a small evaluator of detkit's own, never by a Python. Detectron2 (fvcore's loader) falls back
// to yaml.unsafe_load and Python's eval for them; detkit computes the same values for the
// expressions its configs use and refuses anything else by name.
//
// Accepted: int and float literals (decimal, 0x/0o/0b, underscores, exponents), True, False, None,
// strings; + - * / // % ** and unary + -, with Python's precedence, types and rounding (int / int
// is a float, int ** negative int a float, // and % floor towards -inf); parentheses; list and
// tuple displays; list comprehensions (and generator expressions as the argument of list() or
// tuple()) with one or more `for NAME in ...` clauses; and the calls range(), int(), float(),
// list(), tuple(), abs(), min(), max(), len(). Ints are 64-bit: a result Python would hold as a
// larger int is refused, as is every other name, attribute, keyword or operator.
#include <cstddef>
#include <string>

#include "detkit/config/cfg_value.h"

namespace detkit::config {

/// Evaluates `expression`; tuples and lists both become CfgValue lists. Throws detkit::Error
/// naming the offending token and its column, or the limit reached. `max_values` bounds the
/// values the result holds (nested items counted) and every list built on the way.
CfgValue eval_python_expression(const std::string& expression, size_t max_values);

}  // namespace detkit::config
