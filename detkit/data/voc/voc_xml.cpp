#include "detkit/data/voc/voc_xml.h"

#include <cstdint>

#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::data {

namespace {

constexpr int kMaxXmlDepth = 256;

bool is_xml_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool is_name_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':' ||
         static_cast<unsigned char>(c) >= 0x80;
}

bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class XmlParser {
 public:
  XmlParser(const std::string& text, const std::string& source) : s_(text), source_(source) {}

  XmlElement parse_document() {
    if (s_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;
    skip_misc();
    if (at_end()) fail("no root element");
    if (s_[pos_] != '<') fail("text outside the root element");
    XmlElement root = parse_element(1);
    skip_misc();
    if (!at_end()) fail("content after the root element </" + root.name + ">");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(source_ + ":" + std::to_string(line_of(pos_)) + ": malformed XML: " + what);
  }

  int line_of(size_t pos) const {
    if (pos > s_.size()) pos = s_.size();
    if (pos < line_pos_) line_pos_ = 0, line_ = 1;
    for (; line_pos_ < pos; ++line_pos_)
      if (s_[line_pos_] == '\n') ++line_;
    return line_;
  }

  bool at_end() const { return pos_ >= s_.size(); }
  bool starts_with(const char* prefix) const {
    return s_.compare(pos_, std::char_traits<char>::length(prefix), prefix) == 0;
  }
  void skip_spaces() {
    while (!at_end() && is_xml_space(s_[pos_])) ++pos_;
  }
  // Moves past `terminator`; an error naming `what` when the text ends first.
  void skip_past(const char* terminator, const char* what) {
    const size_t end = s_.find(terminator, pos_);
    if (end == std::string::npos) fail(std::string("unterminated ") + what);
    pos_ = end + std::char_traits<char>::length(terminator);
  }
  // Comments, processing instructions (the declaration) and whitespace between elements.
  void skip_misc() {
    for (;;) {
      skip_spaces();
      if (starts_with("<!--")) {
        skip_comment();
      } else if (starts_with("<?")) {
        skip_past("?>", "processing instruction");
      } else if (starts_with("<!")) {
        fail("DOCTYPE and other declarations are not supported");
      } else {
        return;
      }
    }
  }
  void skip_comment() {
    pos_ += 4;
    const size_t end = s_.find("--", pos_);
    if (end == std::string::npos) fail("unterminated comment");
    pos_ = end;
    if (!starts_with("-->")) fail("'--' inside a comment");
    pos_ += 3;
  }

  std::string parse_name() {
    if (at_end() || !is_name_start(s_[pos_])) fail("expected a name");
    const size_t begin = pos_;
    while (!at_end() && is_name_char(s_[pos_])) ++pos_;
    return s_.substr(begin, pos_ - begin);
  }

  // At '&': appends the decoded entity or character reference.
  void parse_reference(std::string& out) {
    const size_t end = s_.find(';', pos_);
    if (end == std::string::npos || end - pos_ > 12) fail("'&' that starts no entity (use &amp;)");
    const std::string ref = s_.substr(pos_ + 1, end - pos_ - 1);
    if (ref == "amp") {
      out += '&';
    } else if (ref == "lt") {
      out += '<';
    } else if (ref == "gt") {
      out += '>';
    } else if (ref == "quot") {
      out += '"';
    } else if (ref == "apos") {
      out += '\'';
    } else if (ref.size() >= 2 && ref[0] == '#') {
      const bool hex = ref[1] == 'x';
      const std::string digits = ref.substr(hex ? 2 : 1);
      uint32_t cp = 0;
      if (digits.empty()) fail("empty character reference &" + ref + ";");
      for (char c : digits) {
        int d = -1;
        if (c >= '0' && c <= '9') d = c - '0';
        if (hex && c >= 'a' && c <= 'f') d = c - 'a' + 10;
        if (hex && c >= 'A' && c <= 'F') d = c - 'A' + 10;
        if (d < 0) fail("bad character reference &" + ref + ";");
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(d);
        if (cp > 0x10FFFF) fail("character reference &" + ref + "; out of range");
      }
      if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) fail("invalid character &" + ref + ";");
      append_utf8(out, cp);
    } else {
      fail("unknown entity &" + ref + "; (only &amp; &lt; &gt; &quot; &apos; and &#N;)");
    }
    pos_ = end + 1;
  }

  // Character data up to the next '<', decoded, line ends normalised to '\n'.
  void parse_text(std::string* out) {
    std::string discard;
    std::string& text = out ? *out : discard;
    while (!at_end() && s_[pos_] != '<') {
      const char c = s_[pos_];
      if (c == '&') {
        parse_reference(text);
        continue;
      }
      if (static_cast<unsigned char>(c) < 0x20 && !is_xml_space(c))
        fail("control character " + std::to_string(static_cast<int>(c)) + " in text");
      if (c == '\r') {
        text += '\n';
        if (pos_ + 1 < s_.size() && s_[pos_ + 1] == '\n') ++pos_;
      } else {
        text += c;
      }
      ++pos_;
    }
  }

  void skip_attributes(const std::string& element) {
    for (;;) {
      const size_t before = pos_;
      skip_spaces();
      if (at_end()) fail("unterminated start tag <" + element);
      if (s_[pos_] == '>' || s_[pos_] == '/') return;
      if (pos_ == before) fail("expected whitespace before an attribute in <" + element + ">");
      const std::string attribute = parse_name();
      skip_spaces();
      if (at_end() || s_[pos_] != '=')
        fail("attribute '" + attribute + "' of <" + element + "> has no value");
      ++pos_;
      skip_spaces();
      if (at_end() || (s_[pos_] != '"' && s_[pos_] != '\''))
        fail("attribute '" + attribute + "' of <" + element + "> needs a quoted value");
      const char quote = s_[pos_++];
      while (!at_end() && s_[pos_] != quote) {
        if (s_[pos_] == '<') fail("'<' in attribute '" + attribute + "' of <" + element + ">");
        if (s_[pos_] == '&') {
          std::string ignored;
          parse_reference(ignored);
        } else {
          ++pos_;
        }
      }
      if (at_end()) fail("unterminated value of attribute '" + attribute + "'");
      ++pos_;
    }
  }

  // At '<' of a start tag.
  XmlElement parse_element(int depth) {
    if (depth > kMaxXmlDepth) fail("elements nested deeper than " + std::to_string(kMaxXmlDepth));
    XmlElement e;
    e.line = line_of(pos_);
    ++pos_;
    e.name = parse_name();
    skip_attributes(e.name);
    if (starts_with("/>")) {
      pos_ += 2;
      return e;
    }
    ++pos_;  // '>'
    for (;;) {
      parse_text(e.children.empty() ? &e.text : nullptr);
      if (at_end()) fail("<" + e.name + "> (line " + std::to_string(e.line) + ") is not closed");
      if (starts_with("</")) {
        pos_ += 2;
        const std::string closing = parse_name();
        if (closing != e.name)
          fail("</" + closing + "> closes <" + e.name + "> of line " + std::to_string(e.line));
        skip_spaces();
        if (at_end() || s_[pos_] != '>') fail("unterminated end tag </" + closing);
        ++pos_;
        return e;
      }
      if (starts_with("<!--")) {
        skip_comment();
      } else if (starts_with("<![CDATA[")) {
        pos_ += 9;
        const size_t end = s_.find("]]>", pos_);
        if (end == std::string::npos) fail("unterminated CDATA section");
        if (e.children.empty()) e.text.append(s_, pos_, end - pos_);
        pos_ = end + 3;
      } else if (starts_with("<?")) {
        skip_past("?>", "processing instruction");
      } else if (starts_with("<!")) {
        fail("declaration inside <" + e.name + ">");
      } else {
        e.children.push_back(parse_element(depth + 1));
      }
    }
  }

  const std::string& s_;
  const std::string& source_;
  size_t pos_ = 0;
  mutable size_t line_pos_ = 0;
  mutable int line_ = 1;
};

}  // namespace

const XmlElement* XmlElement::find(const std::string& path) const {
  const XmlElement* at = this;
  size_t begin = 0;
  for (;;) {
    const size_t slash = path.find('/', begin);
    const std::string step = path.substr(begin, slash == std::string::npos ? slash : slash - begin);
    const XmlElement* next = nullptr;
    for (const XmlElement& child : at->children)
      if (child.name == step) {
        next = &child;
        break;
      }
    if (!next || slash == std::string::npos) return next;
    at = next;
    begin = slash + 1;
  }
}

std::vector<const XmlElement*> XmlElement::children_named(const std::string& name) const {
  std::vector<const XmlElement*> out;
  for (const XmlElement& child : children)
    if (child.name == name) out.push_back(&child);
  return out;
}

XmlElement parse_xml(const std::string& text, const std::string& source) {
  return XmlParser(text, source).parse_document();
}

XmlElement read_xml_file(const std::string& path) { return parse_xml(read_file(path), path); }

}  // namespace detkit::data
