#pragma once
// One config leaf value with Detectron2's (yacs') value types: None, bool, int, float, string and
// lists/tuples of these (tuples are lists here: yacs treats the two as interchangeable).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace detkit::config {

class CfgValue {
 public:
  enum class Kind { Null, Bool, Int, Float, String, List };

  CfgValue() = default;  // None
  CfgValue(bool v);
  CfgValue(int v);
  CfgValue(int64_t v);
  CfgValue(double v);
  CfgValue(const char* v);
  CfgValue(std::string v);
  CfgValue(std::vector<CfgValue> v);

  static CfgValue list(std::vector<CfgValue> items) { return CfgValue(std::move(items)); }

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }

  // Typed access; each throws detkit::Error when the value is of another kind.
  bool as_bool() const;
  int64_t as_int() const;
  double as_float() const;  // ints are accepted as floats
  const std::string& as_string() const;
  const std::vector<CfgValue>& as_list() const;
  std::vector<int64_t> as_int_list() const;
  std::vector<double> as_float_list() const;
  std::vector<std::string> as_string_list() const;
  std::vector<std::vector<int64_t>> as_int_list_list() const;
  std::vector<std::vector<double>> as_float_list_list() const;

  /// Python-literal form, as Detectron2 prints it: None, True, 0.02, 'abc', [1, 2].
  std::string repr() const;

  bool operator==(const CfgValue& other) const;
  bool operator!=(const CfgValue& other) const { return !(*this == other); }

 private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0.0;
  std::string string_;
  std::vector<CfgValue> list_;
};

/// Name of a kind for messages: "None", "bool", "int", "float", "string", "list".
const char* kind_name(CfgValue::Kind kind);

/// Values `v` holds, itself and every nested item counted: what the per-key limits count.
size_t count_values(const CfgValue& v);

/// Shortest decimal text that reads back as exactly `v`, always with a '.' or exponent so YAML
/// and Python read it back as a float (0.02, 1.0, 1.0e-10).
std::string format_float(double v);

/// Parses a command-line override value as Detectron2 does (Python's literal_eval, falling back
/// to the raw string): "0.02", "True", "None", "(640, 672)", "[[32], [64]]", "'a'", "coco_val".
CfgValue parse_literal(const std::string& text);

}  // namespace detkit::config
