// Pascal VOC annotation XML: the reader (elements, text, comments, CDATA, entities), then the
// fields load_voc_instances reads from the tree, from a file as the loader opens it.
#include "detkit/data/voc/pascal_voc.h"
#include "detkit/data/voc/voc_xml.h"
#include "fuzz/fuzz_support.h"

namespace {

// Every element's children and text, to the bottom of the tree.
size_t count_elements(const detkit::data::XmlElement& e, int depth) {
  if (depth > 256) __builtin_trap();  // the reader caps nesting at 256
  size_t n = 1;
  for (const auto& child : e.children) n += count_elements(child, depth + 1);
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  detkit::fuzz::refuse_only_with_named_errors([&] {
    const auto root = detkit::data::parse_xml(text, "fuzz.xml");
    (void)count_elements(root, 1);
    (void)root.find("size/width");
    (void)root.children_named("object");
  });
  detkit::fuzz::refuse_only_with_named_errors([&] {
    const std::string path = detkit::fuzz::write_scratch("annotation.xml", data, size);
    (void)detkit::data::read_voc_annotation(path);
  });
  return 0;
}
