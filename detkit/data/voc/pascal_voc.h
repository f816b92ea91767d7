#pragma once
// Pascal VOC detection data as Detectron2's load_voc_instances reads it (datasets/pascal_voc.py):
//   <dirname>/ImageSets/Main/<split>.txt   one image stem per line
//   <dirname>/Annotations/<stem>.xml       size/{width,height}, object/{name,bndbox/{xmin,...}}
//   <dirname>/JPEGImages/<stem>.jpg        the image (not opened here)
// Boxes are VOC's 1-based inclusive pixels: loaded as [xmin - 1, ymin - 1, xmax, ymax] (XYXY,
// absolute), so (1, W) covers the whole image. Objects marked `difficult` are kept for training,
// as Detectron2 keeps them; the evaluator (detkit/evaluation/voc_eval.h) reads the flag itself.
#include <array>
#include <string>
#include <vector>

#include "detkit/data/coco/coco_dataset.h"
#include "detkit/data/voc/voc_xml.h"

namespace detkit::data {

/// Detectron2's CLASS_NAMES: the 20 VOC classes, in the order of their contiguous ids 0..19.
const std::vector<std::string>& voc_class_names();

/// The stems of an ImageSets file, in file order: one per line, surrounding whitespace and blank
/// lines skipped (as np.loadtxt). A stem listed twice, or a line of several words, is an error
/// naming the file and the lines.
std::vector<std::string> read_voc_image_set(const std::string& path);

/// An element's text as Python's int() / float() read it (surrounding whitespace allowed); an
/// error naming `source` and `where` (the element path) when it is not one.
int64_t voc_int(const XmlElement& element, const std::string& source, const std::string& where);
double voc_float(const XmlElement& element, const std::string& source, const std::string& where);
/// The child at `path` of `parent`; a missing one is an error naming `source` and
/// `where` + "/" + path.
const XmlElement& voc_child(const XmlElement& parent, const std::string& path,
                            const std::string& source, const std::string& where);

/// One object of an annotation file, as load_voc_instances reads it.
struct VocObject {
  std::string name;
  std::array<double, 4> bbox;  // the file's xmin, ymin, xmax, ymax (1-based, inclusive)
};

/// One annotation file as load_voc_instances reads it: the image's size and its objects.
struct VocAnnotation {
  int64_t width = 0, height = 0;
  std::vector<VocObject> objects;
};

/// Reads Annotations/<stem>.xml; a missing file, malformed XML, or a missing or non-numeric field
/// is an error naming the file (and the element path).
VocAnnotation read_voc_annotation(const std::string& xml_file);

/// Detectron2's load_voc_instances as a CocoDataset: image i is the split's i-th stem (id i,
/// file name JPEGImages/<stem>.jpg under image_root `dirname`), its objects in file order with
/// class index = position of their name in `class_names` (category id = class index), boxes
/// [xmin - 1, ymin - 1, xmax, ymax] stored as XYWH, no masks, none crowd. An object whose name is
/// not in `class_names` is an error naming the file and the name.
CocoDataset load_voc_instances(const std::string& dirname, const std::string& split,
                               const std::vector<std::string>& class_names);

}  // namespace detkit::data
