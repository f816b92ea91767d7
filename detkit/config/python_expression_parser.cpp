// The tokenizer and parser of the `!!python/object/apply:eval` evaluator: Python's grammar for the
// accepted subset (python_expression.h), read one token ahead so that the first thing refused is
// the first named.
#include "detkit/config/python_expression_parser.h"

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "detkit/utils/error.h"

namespace detkit::config::python_expression {

const char* const kAccepted =
    "detkit evaluates numbers, strings, True/False/None, + - * / // % **, parentheses, lists, "
    "tuples, list comprehensions and range/int/float/list/tuple/abs/min/max/len, never a Python";

void refuse(size_t column, const std::string& what) {
  throw Error("at column " + std::to_string(column) + ": " + what);
}

bool strip_underscores(const std::string& digits, std::string& out) {
  out.clear();
  for (size_t i = 0; i < digits.size(); ++i) {
    if (digits[i] != '_') {
      out += digits[i];
      continue;
    }
    if (i == 0 || i + 1 == digits.size() || digits[i + 1] == '_' || digits[i - 1] == '_')
      return false;
  }
  return true;
}

namespace {

struct Token {
  enum class Kind { Int, Float, String, Name, Op, End };
  Kind kind = Kind::End;
  std::string text;   // the source text (a string token: its value)
  CfgValue value;     // numbers
  size_t column = 0;  // 1-based
};

bool is_keyword(const std::string& w) {
  static const char* const kKeywords[] = {
      "and",    "as",   "assert", "async",  "await",  "break",   "class",    "continue",
      "def",    "del",  "elif",   "else",   "except", "finally", "for",      "from",
      "global", "if",   "import", "in",     "is",     "lambda",  "nonlocal", "not",
      "or",     "pass", "raise",  "return", "try",    "while",   "with",     "yield"};
  for (const char* k : kKeywords)
    if (w == k) return true;
  return false;
}

// Digits of one base with Python's underscores (one between two digits); false when malformed.

class Tokenizer {
 public:
  explicit Tokenizer(const std::string& s) : s_(s) {}

  Token next() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    Token t;
    t.column = pos_ + 1;
    if (pos_ == s_.size()) return t;  // End
    const char c = s_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && pos_ + 1 < s_.size() &&
         std::isdigit(static_cast<unsigned char>(s_[pos_ + 1]))))
      number(t);
    else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_')
      name(t);
    else if (c == '\'' || c == '"')
      string(t, c);
    else
      op(t);
    return t;
  }

 private:
  void number(Token& t) {
    const size_t start = pos_;
    auto is_word_char = [&](size_t i) {
      return i < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i])) || s_[i] == '_');
    };
    if (s_[pos_] == '0' && pos_ + 1 < s_.size() && std::strchr("xXoObB", s_[pos_ + 1])) {
      const char kind = static_cast<char>(std::tolower(static_cast<unsigned char>(s_[pos_ + 1])));
      const int base = kind == 'x' ? 16 : kind == 'o' ? 8 : 2;
      pos_ += 2;
      const size_t digits_start = pos_;
      while (is_word_char(pos_)) ++pos_;
      t.text = s_.substr(start, pos_ - start);
      std::string written = s_.substr(digits_start, pos_ - digits_start), digits;
      if (!written.empty() && written[0] == '_') written.erase(0, 1);  // 0x_ff is Python
      if (written.empty() || !strip_underscores(written, digits))
        refuse(t.column, "malformed number '" + t.text + "'");
      uint64_t v = 0;
      for (char d : digits) {
        int digit = std::isdigit(static_cast<unsigned char>(d))
                        ? d - '0'
                        : std::tolower(static_cast<unsigned char>(d)) - 'a' + 10;
        if (digit < 0 || digit >= base) refuse(t.column, "malformed number '" + t.text + "'");
        if (v > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - digit) / base)
          refuse(t.column, "integer literal '" + t.text + "' does not fit in 64 bits");
        v = v * base + digit;
      }
      t.kind = Token::Kind::Int;
      t.value = CfgValue(static_cast<int64_t>(v));
      return;
    }
    bool is_float = false;
    auto digits = [&] {
      while (pos_ < s_.size() &&
             (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        ++pos_;
    };
    digits();
    if (pos_ < s_.size() && s_[pos_] == '.') {
      is_float = true;
      ++pos_;
      digits();
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      size_t after = pos_ + 1;
      if (after < s_.size() && (s_[after] == '+' || s_[after] == '-')) ++after;
      if (after < s_.size() && std::isdigit(static_cast<unsigned char>(s_[after]))) {
        is_float = true;
        pos_ = after;
        digits();
      }
    }
    const bool trailing_word = is_word_char(pos_);
    while (is_word_char(pos_)) ++pos_;
    t.text = s_.substr(start, pos_ - start);
    if (trailing_word) {
      const char last = t.text.back();
      if (last == 'j' || last == 'J') refuse(t.column, "complex number '" + t.text + "' refused");
      refuse(t.column, "malformed number '" + t.text + "'");
    }
    // Underscores: each must sit between two digits (not beside '.', 'e' or a sign).
    for (size_t i = 0; i < t.text.size(); ++i)
      if (t.text[i] == '_' && (i == 0 || i + 1 == t.text.size() ||
                               !std::isdigit(static_cast<unsigned char>(t.text[i - 1])) ||
                               !std::isdigit(static_cast<unsigned char>(t.text[i + 1]))))
        refuse(t.column, "malformed number '" + t.text + "'");
    std::string plain;
    for (char ch : t.text)
      if (ch != '_') plain += ch;
    if (is_float) {
      t.kind = Token::Kind::Float;
      t.value = CfgValue(std::strtod(plain.c_str(), nullptr));  // 1e999 is inf, as in Python
      return;
    }
    if (plain.size() > 1 && plain[0] == '0' && plain.find_first_not_of('0') != std::string::npos)
      refuse(t.column, "'" + t.text + "': leading zeros in a decimal integer are not Python");
    errno = 0;
    const long long v = std::strtoll(plain.c_str(), nullptr, 10);
    if (errno == ERANGE)
      refuse(t.column, "integer literal '" + t.text + "' does not fit in 64 bits");
    t.kind = Token::Kind::Int;
    t.value = CfgValue(static_cast<int64_t>(v));
  }

  void name(Token& t) {
    const size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    t.kind = Token::Kind::Name;
    t.text = s_.substr(start, pos_ - start);
    if (pos_ < s_.size() && (s_[pos_] == '\'' || s_[pos_] == '"'))
      refuse(t.column, "string prefix '" + t.text + "' refused (plain quotes only)");
  }

  void string(Token& t, char quote) {
    if (s_.compare(pos_, 3, std::string(3, quote)) == 0)
      refuse(t.column, "triple-quoted strings are refused");
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] == '\n') refuse(t.column, "unterminated string");
      char c = s_[pos_++];
      if (c == quote) break;
      if (c == '\\') {
        if (pos_ >= s_.size()) refuse(t.column, "unterminated string");
        const char e = s_[pos_++];
        switch (e) {
          case '\\':
          case '\'':
          case '"':
            out += e;
            break;
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          default:
            refuse(pos_ - 1,
                   std::string("escape '\\") + e + "' refused (\\\\ \\' \\\" \\n \\t only)");
        }
        continue;
      }
      out += c;
    }
    if (out.size() > kMaxStringLength) refuse(t.column, "string literal too long");
    t.kind = Token::Kind::String;
    t.text = out;
  }

  void op(Token& t) {
    t.kind = Token::Kind::Op;
    for (const char* two : {"**", "//"})
      if (s_.compare(pos_, 2, two) == 0) {
        t.text = two;
        pos_ += 2;
        return;
      }
    const char c = s_[pos_];
    if (std::strchr("+-*/%()[],", c) != nullptr) {
      t.text = std::string(1, c);
      ++pos_;
      return;
    }
    if (c == '.') refuse(t.column, "attribute access ('.') refused; " + std::string(kAccepted));
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      refuse(t.column, "character code " + std::to_string(static_cast<unsigned char>(c)) +
                           " refused; " + kAccepted);
    refuse(t.column, std::string("'") + c + "' refused; " + kAccepted);
  }

  const std::string& s_;
  size_t pos_ = 0;
};

NodePtr make(Node::Kind kind, size_t column, std::string text = {}) {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  n->column = column;
  n->text = std::move(text);
  return n;
}

class Parser {
 public:
  // Tokens are read one ahead of the parser, so the first thing refused is the first named.
  explicit Parser(const std::string& expression) : lexer_(expression), current_(lexer_.next()) {}

  NodePtr parse() {
    NodePtr first = expression();
    if (is_op(",")) {  // eval("1, 2") is a tuple
      auto tuple = make(Node::Kind::Tuple, first->column);
      tuple->items.push_back(std::move(first));
      while (accept_op(",")) {
        if (peek().kind == Token::Kind::End) break;
        tuple->items.push_back(expression());
      }
      first = std::move(tuple);
    }
    if (peek().kind != Token::Kind::End) unexpected();
    return first;
  }

 private:
  const Token& peek() const { return current_; }
  Token next() {
    Token t = current_;
    if (t.kind != Token::Kind::End) current_ = lexer_.next();
    return t;
  }
  bool is_op(const char* op) const { return peek().kind == Token::Kind::Op && peek().text == op; }
  bool is_name(const char* name) const {
    return peek().kind == Token::Kind::Name && peek().text == name;
  }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) unexpected(std::string("expected '") + op + "'");
  }
  [[noreturn]] void unexpected(const std::string& expected = "") const {
    const Token& t = peek();
    if (t.kind == Token::Kind::End)
      refuse(t.column,
             "unexpected end of the expression" + (expected.empty() ? "" : "; " + expected));
    if (t.kind == Token::Kind::Name && (t.text == "if" || t.text == "lambda" || t.text == "not" ||
                                        t.text == "and" || t.text == "or"))
      refuse(t.column, "'" + t.text + "' refused; " + kAccepted);
    refuse(t.column, "unexpected '" + t.text + "'" + (expected.empty() ? "" : "; " + expected));
  }

  struct Depth {
    explicit Depth(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting)
        refuse(p_.peek().column,
               "nested more than " + std::to_string(kMaxNesting) + " levels deep");
    }
    ~Depth() { --p_.depth_; }
    Parser& p_;
  };

  NodePtr expression() { return arith(); }

  NodePtr binary(NodePtr left, const Token& op, NodePtr right) {
    auto n = make(Node::Kind::Binary, op.column, op.text);
    n->items.push_back(std::move(left));
    n->items.push_back(std::move(right));
    return n;
  }

  NodePtr arith() {
    NodePtr left = term();
    while (is_op("+") || is_op("-")) {
      const Token op = next();
      left = binary(std::move(left), op, term());
    }
    return left;
  }

  NodePtr term() {
    NodePtr left = factor();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token op = next();
      left = binary(std::move(left), op, factor());
    }
    return left;
  }

  NodePtr factor() {
    Depth depth(*this);
    if (is_op("+") || is_op("-")) {
      const Token op = next();
      auto n = make(Node::Kind::Unary, op.column, op.text);
      n->items.push_back(factor());
      return n;
    }
    return power();
  }

  NodePtr power() {
    NodePtr base = primary();
    if (is_op("**")) {  // right-associative, and binds tighter than a unary sign on its left
      const Token op = next();
      return binary(std::move(base), op, factor());
    }
    return base;
  }

  NodePtr primary() {
    NodePtr a = atom();
    if (a->kind == Node::Kind::Name && is_op("(")) {
      auto call = make(Node::Kind::Call, a->column, a->text);
      next();
      Depth depth(*this);
      if (!accept_op(")")) {
        call->items.push_back(expression());
        if (is_name("for")) {  // f(x for x in ...): a generator as the only argument
          auto gen = make(Node::Kind::Comprehension, call->items[0]->column);
          gen->generator = true;
          gen->items.push_back(std::move(call->items[0]));
          loops(*gen);
          call->items[0] = std::move(gen);
          expect_op(")");
        } else {
          while (accept_op(",")) {
            if (accept_op(")")) return call;
            call->items.push_back(expression());
          }
          expect_op(")");
        }
      }
      return call;
    }
    return a;
  }

  void loops(Node& n) {
    while (is_name("for")) {
      next();
      const Token var = next();
      if (var.kind != Token::Kind::Name || is_keyword(var.text) || var.text == "True" ||
          var.text == "False" || var.text == "None")
        refuse(var.column, "expected a name after 'for', got '" + var.text + "'");
      if (is_op(","))
        refuse(peek().column, "unpacking in a 'for' clause is refused; " + std::string(kAccepted));
      if (!is_name("in")) unexpected("expected 'in'");
      next();
      n.loop_names.push_back(var.text);
      n.loop_iterables.push_back(arith());
      if (is_name("if"))
        refuse(peek().column, "'if' in a comprehension is refused; " + std::string(kAccepted));
    }
  }

  NodePtr atom() {
    const Token t = peek();
    switch (t.kind) {
      case Token::Kind::Int:
      case Token::Kind::Float: {
        next();
        auto n = make(Node::Kind::Constant, t.column);
        n->constant = t.value;
        return n;
      }
      case Token::Kind::String: {
        next();
        auto n = make(Node::Kind::Constant, t.column);
        n->constant = CfgValue(t.text);
        return n;
      }
      case Token::Kind::Name: {
        if (is_keyword(t.text)) unexpected();
        next();
        auto n = make(Node::Kind::Constant, t.column);
        if (t.text == "True")
          n->constant = CfgValue(true);
        else if (t.text == "False")
          n->constant = CfgValue(false);
        else if (t.text == "None")
          n->constant = CfgValue();
        else
          n = make(Node::Kind::Name, t.column, t.text);
        return n;
      }
      case Token::Kind::Op:
        if (t.text == "(" || t.text == "[") return display(t);
        unexpected();
      case Token::Kind::End:
        unexpected();
    }
    unexpected();
  }

  // ( ), (x), (x,), (x, y), (x for ...), [ ], [x, y], [x for ...]
  NodePtr display(const Token& open) {
    Depth depth(*this);
    next();
    const bool list = open.text == "[";
    const char* close = list ? "]" : ")";
    auto n = make(list ? Node::Kind::List : Node::Kind::Tuple, open.column);
    if (accept_op(close)) return n;
    NodePtr first = expression();
    if (is_name("for")) {
      auto comp = make(Node::Kind::Comprehension, open.column);
      comp->generator = !list;
      comp->items.push_back(std::move(first));
      loops(*comp);
      expect_op(close);
      return comp;
    }
    if (!list && is_op(")")) {  // (x) is x
      next();
      return first;
    }
    n->items.push_back(std::move(first));
    while (accept_op(",")) {
      if (is_op(close)) break;
      n->items.push_back(expression());
    }
    expect_op(close);
    return n;
  }

  Tokenizer lexer_;
  Token current_;
  size_t depth_ = 0;
};

}  // namespace

NodePtr parse(const std::string& expression) { return Parser(expression).parse(); }

}  // namespace detkit::config::python_expression
