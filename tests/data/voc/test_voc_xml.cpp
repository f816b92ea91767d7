// The VOC XML reader: ElementTree's view of a document (find, findall, .text), and malformed
// documents refused with the source and line.
#include <gtest/gtest.h>

#include "detkit/data/voc/voc_xml.h"
#include "tests/support/error_of.h"

namespace detkit::data {
namespace {

using detkit::testing::error_of;
using detkit::testing::expect_contains;

TEST(VocXml, ReadsElementsTextAndSkipsTheRest) {
  const std::string text =
      "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
      "<!-- a comment -->\n"
      "<annotation verified='no'>\n"
      "  <filename>a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos; &#65;&#x42;&#xe9;</filename>\n"
      "  <size><width>640</width><height>\r\n480</height></size>\n"
      "  <object><name>dog</name><bndbox><xmin>1</xmin></bndbox></object>\n"
      "  <object><name>c<!-- x -->at</name><empty/><raw><![CDATA[<b> & ]]></raw></object>\n"
      "</annotation>\n<!-- trailing -->\n";
  const XmlElement root = parse_xml(text, "t.xml");
  EXPECT_EQ(root.name, "annotation");
  EXPECT_EQ(root.line, 3);
  EXPECT_EQ(root.find("filename")->text, "a&b <c> \"d\" 'e' AB\xC3\xA9");
  EXPECT_EQ(root.find("size/width")->text, "640");
  EXPECT_EQ(root.find("size/height")->text, "\n480");
  EXPECT_EQ(root.find("size/depth"), nullptr);
  EXPECT_EQ(root.find("nothing/width"), nullptr);
  const auto objects = root.children_named("object");
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_EQ(objects[0]->find("bndbox/xmin")->text, "1");
  EXPECT_EQ(objects[0]->line, 7);  // the \r\n in <height> is a line end
  EXPECT_EQ(objects[1]->find("name")->text, "cat");
  EXPECT_EQ(objects[1]->find("empty")->text, "");
  EXPECT_EQ(objects[1]->find("raw")->text, "<b> & ");
  // .text is the text before the first child, as ElementTree's.
  EXPECT_EQ(parse_xml("<a>x<b/>y</a>", "t").text, "x");
}

TEST(VocXml, MalformedDocumentsNameTheSourceAndLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "t.xml:1: malformed XML: no root element"},
      {"<a>\n<b>\n</a>", "t.xml:3: malformed XML: </a> closes <b> of line 2"},
      {"<a>\n<b>x</b>", "t.xml:2: malformed XML: <a> (line 1) is not closed"},
      {"<a>&foo;</a>", "unknown entity &foo;"},
      {"<a>& b</a>", "'&' that starts no entity"},
      {"<a>&#0;</a>", "invalid character &#0;"},
      {"<a>&#x110000;</a>", "out of range"},
      {"<a b=c></a>", "needs a quoted value"},
      {"<a b></a>", "has no value"},
      {"<a b='<'></a>", "'<' in attribute"},
      {"<a></a>\n<b></b>", "t.xml:2: malformed XML: content after the root element"},
      {"text<a/>", "text outside the root element"},
      {"<!DOCTYPE a><a/>", "DOCTYPE"},
      {"<a><!-- x -- y --></a>", "'--' inside a comment"},
      {"<a><!-- x </a>", "unterminated comment"},
      {"<a><![CDATA[x</a>", "unterminated CDATA"},
      {"<a>\x01</a>", "control character 1"},
      {"<1a/>", "expected a name"},
      {"<a", "unterminated start tag <a"},
  };
  for (const auto& [text, message] : cases)
    expect_contains(error_of([&] { parse_xml(text, "t.xml"); }), message);
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "<a>";
  expect_contains(error_of([&] { parse_xml(deep, "t.xml"); }), "nested deeper than 256");
  expect_contains(error_of([&] { read_xml_file("/nonexistent/x.xml"); }), "/nonexistent/x.xml");
}

}  // namespace
}  // namespace detkit::data
