#include "detkit/config/cfg_value.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "detkit/utils/error.h"

namespace detkit::config {

CfgValue::CfgValue(bool v) : kind_(Kind::Bool), bool_(v) {}
CfgValue::CfgValue(int v) : kind_(Kind::Int), int_(v) {}
CfgValue::CfgValue(int64_t v) : kind_(Kind::Int), int_(v) {}
CfgValue::CfgValue(double v) : kind_(Kind::Float), float_(v) {}
CfgValue::CfgValue(const char* v) : kind_(Kind::String), string_(v) {}
CfgValue::CfgValue(std::string v) : kind_(Kind::String), string_(std::move(v)) {}
CfgValue::CfgValue(std::vector<CfgValue> v) : kind_(Kind::List), list_(std::move(v)) {}

const char* kind_name(CfgValue::Kind kind) {
  switch (kind) {
    case CfgValue::Kind::Null: return "None";
    case CfgValue::Kind::Bool: return "bool";
    case CfgValue::Kind::Int: return "int";
    case CfgValue::Kind::Float: return "float";
    case CfgValue::Kind::String: return "string";
    case CfgValue::Kind::List: return "list";
  }
  return "?";
}

namespace {
[[noreturn]] void wrong_kind(const CfgValue& v, const char* wanted) {
  throw Error(std::string("expected ") + wanted + ", got " + kind_name(v.kind()) + " " + v.repr());
}
}  // namespace

bool CfgValue::as_bool() const {
  if (kind_ != Kind::Bool) wrong_kind(*this, "a bool");
  return bool_;
}
int64_t CfgValue::as_int() const {
  if (kind_ != Kind::Int) wrong_kind(*this, "an int");
  return int_;
}
double CfgValue::as_float() const {
  if (kind_ == Kind::Int) return static_cast<double>(int_);
  if (kind_ != Kind::Float) wrong_kind(*this, "a float");
  return float_;
}
const std::string& CfgValue::as_string() const {
  if (kind_ != Kind::String) wrong_kind(*this, "a string");
  return string_;
}
const std::vector<CfgValue>& CfgValue::as_list() const {
  if (kind_ != Kind::List) wrong_kind(*this, "a list");
  return list_;
}

namespace {
template <typename T, typename F>
std::vector<T> map_list(const CfgValue& v, F f) {
  std::vector<T> out;
  for (const auto& item : v.as_list()) out.push_back(f(item));
  return out;
}
}  // namespace

std::vector<int64_t> CfgValue::as_int_list() const {
  return map_list<int64_t>(*this, [](const CfgValue& x) { return x.as_int(); });
}
std::vector<double> CfgValue::as_float_list() const {
  return map_list<double>(*this, [](const CfgValue& x) { return x.as_float(); });
}
std::vector<std::string> CfgValue::as_string_list() const {
  return map_list<std::string>(*this, [](const CfgValue& x) { return x.as_string(); });
}
std::vector<std::vector<int64_t>> CfgValue::as_int_list_list() const {
  return map_list<std::vector<int64_t>>(*this, [](const CfgValue& x) { return x.as_int_list(); });
}
std::vector<std::vector<double>> CfgValue::as_float_list_list() const {
  return map_list<std::vector<double>>(*this,
                                       [](const CfgValue& x) { return x.as_float_list(); });
}

std::string format_float(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  // Shortest round-tripping digits, laid out as Python's repr(): fixed notation for decimal
  // exponents in [-4, 16), scientific otherwise; then ".0" so it stays a float.
  char buf[40];
  for (int precision = 0; precision <= 16; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*e", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string sci = buf;  // [-]d.ddde[+-]xx
  size_t e = sci.find('e');
  int exponent = std::stoi(sci.substr(e + 1));
  std::string sign = sci[0] == '-' ? "-" : "";
  std::string digits;
  for (char c : sci.substr(0, e))
    if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out = "0." + std::string(-exponent - 1, '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out = digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
    }
  } else {
    std::string mantissa = digits.substr(0, 1) + "." + (digits.size() > 1 ? digits.substr(1) : "0");
    out = mantissa + "e" + (exponent < 0 ? "-" : "+") + std::to_string(std::abs(exponent));
  }
  return sign + out;
}

std::string CfgValue::repr() const {
  switch (kind_) {
    case Kind::Null: return "None";
    case Kind::Bool: return bool_ ? "True" : "False";
    case Kind::Int: return std::to_string(int_);
    case Kind::Float: return format_float(float_);
    case Kind::String: {
      std::string out = "'";
      for (char c : string_) {
        if (c == '\'' || c == '\\') out += '\\';
        out += c;
      }
      return out + "'";
    }
    case Kind::List: {
      std::string out = "[";
      for (size_t i = 0; i < list_.size(); ++i) out += (i ? ", " : "") + list_[i].repr();
      return out + "]";
    }
  }
  return "?";
}

bool CfgValue::operator==(const CfgValue& other) const {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::Null: return true;
    case Kind::Bool: return bool_ == other.bool_;
    case Kind::Int: return int_ == other.int_;
    case Kind::Float: return float_ == other.float_ || (std::isnan(float_) && std::isnan(other.float_));
    case Kind::String: return string_ == other.string_;
    case Kind::List: return list_ == other.list_;
  }
  return false;
}

namespace {

// A recursive-descent reader for the subset of Python literals configs use.
class LiteralParser {
 public:
  explicit LiteralParser(const std::string& text) : s_(text) {}

  std::optional<CfgValue> parse_all() {
    auto v = value();
    skip_space();
    if (!v || pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }

  std::optional<CfgValue> value() {
    skip_space();
    if (pos_ >= s_.size()) return std::nullopt;
    char c = s_[pos_];
    if (c == '[' || c == '(') return sequence(c == '[' ? ']' : ')');
    if (c == '\'' || c == '"') return quoted(c);
    return word();
  }

  std::optional<CfgValue> sequence(char close) {
    ++pos_;
    std::vector<CfgValue> items;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == close) {
      ++pos_;
      return CfgValue::list(std::move(items));
    }
    bool comma = false;
    while (true) {
      auto item = value();
      if (!item) return std::nullopt;
      items.push_back(std::move(*item));
      skip_space();
      if (pos_ >= s_.size()) return std::nullopt;
      if (s_[pos_] == ',') {
        ++pos_;
        comma = true;
        skip_space();
        if (pos_ < s_.size() && s_[pos_] == close) {  // trailing comma: (800,)
          ++pos_;
          break;
        }
        continue;
      }
      if (s_[pos_] != close) return std::nullopt;
      ++pos_;
      break;
    }
    // Python's (800) is 800 in parentheses, not a tuple: only a comma makes one.
    if (close == ')' && !comma) return std::move(items.front());
    return CfgValue::list(std::move(items));
  }

  std::optional<CfgValue> quoted(char quote) {
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) return std::nullopt;
    ++pos_;
    return CfgValue(out);
  }

  std::optional<CfgValue> word() {
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != ']' && s_[pos_] != ')' &&
           !std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
    std::string w = s_.substr(start, pos_ - start);
    if (w == "True") return CfgValue(true);
    if (w == "False") return CfgValue(false);
    if (w == "None") return CfgValue();
    return parse_number(w);
  }

  static std::optional<CfgValue> parse_number(const std::string& w) {
    if (w.empty()) return std::nullopt;
    const char* begin = w.c_str();
    char* end = nullptr;
    bool looks_float = w.find_first_of(".eE") != std::string::npos || w == "inf" || w == "nan";
    if (!looks_float) {
      errno = 0;
      long long i = std::strtoll(begin, &end, 10);
      if (*end == '\0' && errno == 0) return CfgValue(static_cast<int64_t>(i));
      return std::nullopt;
    }
    double d = std::strtod(begin, &end);
    if (*end == '\0' && std::isfinite(d)) return CfgValue(d);
    return std::nullopt;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

size_t count_values(const CfgValue& v) {
  size_t n = 1;
  if (v.kind() == CfgValue::Kind::List)
    for (const auto& item : v.as_list()) n += count_values(item);
  return n;
}

CfgValue parse_literal(const std::string& text) {
  if (auto v = LiteralParser(text).parse_all()) return *v;
  return CfgValue(text);
}

}  // namespace detkit::config
