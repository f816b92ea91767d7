#include "detkit/evaluation/panoptic_json.h"

#include <simdjson.h>

#include <cmath>
#include <unordered_set>

#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::evaluation {
namespace {

// Reads one JSON object's fields, failing with `where` (file and path) in the message.
struct PanopticFieldReader {
  std::string where;

  [[noreturn]] void fail(const std::string& what) const { throw Error(where + ": " + what); }

  simdjson::dom::element field(simdjson::dom::object object, const char* key) const {
    simdjson::dom::element value;
    if (object[key].get(value)) fail(std::string("missing \"") + key + "\"");
    return value;
  }

  double number(simdjson::dom::object object, const char* key) const {
    const simdjson::dom::element value = field(object, key);
    if (value.is_int64()) return static_cast<double>(int64_t(value));
    if (value.is_uint64()) return static_cast<double>(uint64_t(value));
    if (value.is_double()) return double(value);
    if (value.is_bool()) return bool(value) ? 1 : 0;
    fail(std::string("\"") + key + "\" must be a number");
  }

  int64_t integer(simdjson::dom::object object, const char* key) const {
    const double v = number(object, key);
    if (v != std::floor(v) || std::abs(v) > 9.0e15)
      fail(std::string("\"") + key + "\" must be an integer");
    return static_cast<int64_t>(v);
  }

  std::string string(simdjson::dom::object object, const char* key) const {
    std::string_view value;
    if (field(object, key).get(value)) fail(std::string("\"") + key + "\" must be a string");
    return std::string(value);
  }

  simdjson::dom::array array(simdjson::dom::element value, const char* key) const {
    simdjson::dom::array out;
    if (value.get(out)) fail(std::string("\"") + key + "\" must be a list");
    return out;
  }

  simdjson::dom::object object(simdjson::dom::element value) const {
    simdjson::dom::object out;
    if (value.get(out)) fail("must be a JSON object");
    return out;
  }
};

PanopticAnnotation read_annotation(const PanopticFieldReader& r, simdjson::dom::object entry,
                                   bool ground_truth) {
  PanopticAnnotation a;
  a.image_id = r.integer(entry, "image_id");
  a.file_name = r.string(entry, "file_name");
  std::unordered_set<int64_t> ids;
  size_t index = 0;
  for (simdjson::dom::element value : r.array(r.field(entry, "segments_info"), "segments_info")) {
    const PanopticFieldReader s{r.where + " (image_id " + std::to_string(a.image_id) +
                                "): segments_info[" + std::to_string(index++) + "]"};
    const simdjson::dom::object segment = s.object(value);
    PanopticSegmentInfo info;
    info.id = s.integer(segment, "id");
    info.category_id = s.integer(segment, "category_id");
    if (ground_truth) {
      info.iscrowd = s.integer(segment, "iscrowd") == 1;
      info.area = s.number(segment, "area");
    }
    if (!ids.insert(info.id).second)
      s.fail("segment id " + std::to_string(info.id) + " is listed twice in this image");
    a.segments_info.push_back(info);
  }
  return a;
}

}  // namespace

PanopticJson parse_panoptic_json(const std::string& json_text, const std::string& file,
                                 bool ground_truth) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto error = parser.parse(json_text).get(doc))
    throw Error(file + ": not valid JSON: " + simdjson::error_message(error));
  const PanopticFieldReader top{file};
  const simdjson::dom::object root = top.object(doc);
  PanopticJson out;
  if (ground_truth) {
    size_t index = 0;
    for (simdjson::dom::element value : top.array(top.field(root, "categories"), "categories")) {
      const PanopticFieldReader c{file + ": categories[" + std::to_string(index++) + "]"};
      const simdjson::dom::object category = c.object(value);
      PanopticCategory info;
      info.id = c.integer(category, "id");
      info.isthing = c.integer(category, "isthing") == 1;
      std::string_view name;
      if (!category["name"].get(name)) info.name = std::string(name);
      out.categories.push_back(std::move(info));
    }
  }
  std::unordered_set<int64_t> image_ids;
  size_t index = 0;
  for (simdjson::dom::element value : top.array(top.field(root, "annotations"), "annotations")) {
    const PanopticFieldReader a{file + ": annotations[" + std::to_string(index++) + "]"};
    out.annotations.push_back(read_annotation(a, a.object(value), ground_truth));
    if (!image_ids.insert(out.annotations.back().image_id).second)
      a.fail("image_id " + std::to_string(out.annotations.back().image_id) +
             " has a second annotation");
  }
  return out;
}

PanopticJson load_panoptic_json(const std::string& path, bool ground_truth) {
  return parse_panoptic_json(read_file(path), path, ground_truth);
}

}  // namespace detkit::evaluation
