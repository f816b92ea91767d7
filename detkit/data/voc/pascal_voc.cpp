#include "detkit/data/voc/pascal_voc.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <unordered_map>

#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::data {

namespace {

std::string strip_python_space(const std::string& s) {
  const char* space = " \t\n\r\f\v";
  const size_t begin = s.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(space) - begin + 1);
}

std::string voc_join(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

}  // namespace

const std::vector<std::string>& voc_class_names() {
  static const std::vector<std::string> names = {
      "aeroplane", "bicycle",     "bird",  "boat",        "bottle", "bus",      "car",
      "cat",       "chair",       "cow",   "diningtable", "dog",    "horse",    "motorbike",
      "person",    "pottedplant", "sheep", "sofa",        "train",  "tvmonitor"};
  return names;
}

std::vector<std::string> read_voc_image_set(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<std::string> stems;
  std::unordered_map<std::string, int> first_line;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string stem = strip_python_space(line);
    if (stem.empty()) continue;
    if (stem.find_first_of(" \t\f\v") != std::string::npos)
      throw Error(path + ":" + std::to_string(number) + ": expected one image name, got '" + stem +
                  "'");
    auto [it, inserted] = first_line.emplace(stem, number);
    if (!inserted)
      throw Error(path + ":" + std::to_string(number) + ": image '" + stem +
                  "' is listed twice (first on line " + std::to_string(it->second) + ")");
    stems.push_back(stem);
  }
  return stems;
}

const XmlElement& voc_child(const XmlElement& parent, const std::string& path,
                            const std::string& source, const std::string& where) {
  const XmlElement* child = parent.find(path);
  if (!child)
    throw Error(source + ": " + where + "/" + path + " is missing (element <" + parent.name +
                "> of line " + std::to_string(parent.line) + ")");
  return *child;
}

int64_t voc_int(const XmlElement& element, const std::string& source, const std::string& where) {
  const std::string text = strip_python_space(element.text);
  size_t i = text.empty() || (text[0] != '+' && text[0] != '-') ? 0 : 1;
  bool ok = i < text.size() && text.size() - i <= 18;
  for (size_t k = i; ok && k < text.size(); ++k) ok = text[k] >= '0' && text[k] <= '9';
  if (!ok)
    throw Error(source + ":" + std::to_string(element.line) + ": " + where +
                " must be an integer, got '" + element.text + "'");
  return std::stoll(text);
}

double voc_float(const XmlElement& element, const std::string& source, const std::string& where) {
  const std::string text = strip_python_space(element.text);
  char* end = nullptr;
  errno = 0;
  const double value = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value))
    throw Error(source + ":" + std::to_string(element.line) + ": " + where +
                " must be a finite number, got '" + element.text + "'");
  return value;
}

VocAnnotation read_voc_annotation(const std::string& xml_file) {
  if (!std::filesystem::exists(xml_file))
    throw Error("Pascal VOC annotation file " + xml_file + " does not exist");
  const XmlElement root = read_xml_file(xml_file);
  const std::string& root_path = root.name;
  VocAnnotation out;
  out.height = voc_int(voc_child(root, "size/height", xml_file, root_path), xml_file,
                       root_path + "/size/height");
  out.width = voc_int(voc_child(root, "size/width", xml_file, root_path), xml_file,
                      root_path + "/size/width");
  const auto objects = root.children_named("object");
  for (size_t k = 0; k < objects.size(); ++k) {
    const std::string where = root_path + "/object[" + std::to_string(k) + "]";
    VocObject object;
    object.name = voc_child(*objects[k], "name", xml_file, where).text;
    const XmlElement& box = voc_child(*objects[k], "bndbox", xml_file, where);
    const char* fields[4] = {"xmin", "ymin", "xmax", "ymax"};
    for (int j = 0; j < 4; ++j)
      object.bbox[j] = voc_float(voc_child(box, fields[j], xml_file, where + "/bndbox"), xml_file,
                                 where + "/bndbox/" + fields[j]);
    out.objects.push_back(std::move(object));
  }
  return out;
}

CocoDataset load_voc_instances(const std::string& dirname, const std::string& split,
                               const std::vector<std::string>& class_names) {
  const std::string image_set = voc_join(dirname, "ImageSets/Main/" + split + ".txt");
  if (!std::filesystem::exists(image_set))
    throw Error("Pascal VOC split file " + image_set + " does not exist");
  const std::vector<std::string> stems = read_voc_image_set(image_set);
  std::unordered_map<std::string, int32_t> class_of;
  for (size_t c = 0; c < class_names.size(); ++c)
    class_of.emplace(class_names[c], static_cast<int32_t>(c));

  CocoDataset ds;
  ds.json_file_ = voc_join(dirname, "Annotations");
  ds.image_root_ = dirname;
  for (size_t c = 0; c < class_names.size(); ++c)
    ds.categories_.push_back(Category{static_cast<int64_t>(c), class_names[c], {}, {}});
  ds.image_ann_begin_.push_back(0);
  ds.poly_coord_begin_.push_back(0);
  for (size_t i = 0; i < stems.size(); ++i) {
    const std::string xml_file = voc_join(dirname, "Annotations/" + stems[i] + ".xml");
    const VocAnnotation annotation = read_voc_annotation(xml_file);
    if (annotation.width <= 0 || annotation.height <= 0 || annotation.width > INT32_MAX ||
        annotation.height > INT32_MAX)
      throw Error(xml_file + ": image size " + std::to_string(annotation.width) + "x" +
                  std::to_string(annotation.height) + " is not positive");
    const std::string file_name = "JPEGImages/" + stems[i] + ".jpg";
    ds.image_ids_.push_back(static_cast<int64_t>(i));
    ds.heights_.push_back(static_cast<int32_t>(annotation.height));
    ds.widths_.push_back(static_cast<int32_t>(annotation.width));
    ds.name_begin_.push_back(ds.names_.size());
    ds.name_size_.push_back(static_cast<uint32_t>(file_name.size()));
    ds.names_ += file_name;
    for (size_t k = 0; k < annotation.objects.size(); ++k) {
      const VocObject& object = annotation.objects[k];
      auto cls = class_of.find(object.name);
      if (cls == class_of.end())
        throw Error(xml_file + ": object[" + std::to_string(k) + "] has class '" + object.name +
                    "', which is not one of the dataset's " + std::to_string(class_names.size()) +
                    " classes");
      const auto& b = object.bbox;
      const double x0 = b[0] - 1.0, y0 = b[1] - 1.0;
      const std::array<double, 4> xywh = {x0, y0, b[2] - x0, b[3] - y0};
      ds.ann_ids_.push_back(static_cast<int64_t>(ds.ann_ids_.size()) + 1);
      ds.ann_class_.push_back(cls->second);
      ds.ann_iscrowd_.push_back(0);
      ds.ann_bbox_.push_back(xywh);
      ds.ann_area_.push_back(xywh[2] * xywh[3]);
      ds.ann_poly_begin_.push_back(static_cast<uint32_t>(ds.poly_coord_begin_.size() - 1));
      ds.ann_poly_count_.push_back(0);
      ds.ann_rle_.push_back(-1);
      ds.ann_kpt_begin_.push_back(0);
      ds.ann_kpt_count_.push_back(0);
      ds.ann_num_keypoints_.push_back(0);
    }
    ds.image_ann_begin_.push_back(ds.ann_ids_.size());
  }
  spdlog::info("Loaded {} images ({} objects) of Pascal VOC {} split '{}'", ds.num_images(),
               ds.num_annotations(), dirname, split);
  return ds;
}

}  // namespace detkit::data
