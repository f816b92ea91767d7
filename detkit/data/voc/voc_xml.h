#pragma once
// A small, strict XML reader for Pascal VOC's annotation files: elements, their text, comments,
// the XML declaration and processing instructions (skipped), attributes (checked, then dropped),
// CDATA sections, and the entities &amp; &lt; &gt; &quot; &apos; and &#N; / &#xN;. No DTD, no
// namespaces. A malformed document is a detkit::Error naming the source and the line.
//
//   XmlElement root = parse_xml(text, "Annotations/000005.xml");
//   for (const XmlElement* object : root.children_named("object"))
//     std::string name = object->find("name")->text;
#include <memory>
#include <string>
#include <vector>

namespace detkit::data {

struct XmlElement {
  std::string name;
  /// The text before the first child element (ElementTree's `.text`), entities decoded; "" when
  /// there is none.
  std::string text;
  int line = 0;  // where the start tag is
  std::vector<XmlElement> children;

  /// The first direct child with this name (ElementTree's find), nullptr when none. A '/' in
  /// `path` steps down: find("bndbox/xmin").
  const XmlElement* find(const std::string& path) const;
  /// The direct children with this name, in document order (ElementTree's findall).
  std::vector<const XmlElement*> children_named(const std::string& name) const;
};

/// The root element of `text`. `source` (a file name) is named in errors. Elements nest at most
/// 256 deep.
XmlElement parse_xml(const std::string& text, const std::string& source);

/// Reads and parses a file; an unreadable file is an error naming it.
XmlElement read_xml_file(const std::string& path);

}  // namespace detkit::data
