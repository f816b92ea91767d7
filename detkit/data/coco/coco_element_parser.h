#pragma once
// simdjson On-Demand parsing of COCO elements (one image, annotation or category object) into a
// CocoDatasetBuilder. Internal to detkit/data; only its .cpp files include simdjson.
#include <simdjson.h>

#include <string>
#include <string_view>
#include <vector>

#include "detkit/data/coco/coco_builder.h"

namespace detkit::data {

namespace od = simdjson::ondemand;

/// One element being parsed: where it is, what is wrong with it so far, and its id once read.
struct CocoDatasetBuilder::Element {
  const char* array;                               // "annotations"
  uint64_t index;                                  // position in that array
  const char* noun;                                // "annotation", named with the id in messages
  std::vector<std::string> problems;               // "<path below the element>: <what>"
  simdjson::error_code fatal = simdjson::SUCCESS;  // malformed JSON: stop reading the element
  int64_t id = 0;
  bool has_id = false;

  bool failed() const { return fatal != simdjson::SUCCESS; }
  void problem(std::string path_and_what) { problems.push_back(std::move(path_and_what)); }
  /// Why `value` could not be read as `expected`: a problem naming `path` when it is a valid
  /// value of another type, the fatal error when the JSON is malformed.
  void wrong_type(simdjson::error_code error, od::value& value, std::string_view path,
                  const char* expected);
  /// Reads `value`; false (after wrong_type) when it is not of the type asked for.
  bool get_int64(od::value& value, std::string_view path, int64_t& out);
  bool get_double(od::value& value, std::string_view path, double& out);
  bool get_string(od::value& value, std::string_view path, std::string_view& out);
  bool get_object(od::value& value, std::string_view path, od::object& out);
  bool get_array(od::value& value, std::string_view path, od::array& out);
  /// A duplicate key is a problem; `seen` collects one bit per known key; `key` is the path below
  /// the element without its leading dot ("bbox", "segmentation.size").
  bool first_time(uint32_t& seen, uint32_t bit, std::string_view key);
};

/// Sizes of the dataset's shared pools before an element, to undo a rejected element.
struct PoolMarks {
  size_t names, coords, polygons, rles, rle_chars, rle_counts, keypoints, image_cat_ids;
};

struct CocoDatasetBuilder::Parser {
  explicit Parser(CocoDatasetBuilder& builder) : b(builder) {}

  /// Parses every element of `batch` with parse_one(value, element), reports each element's
  /// problems, and pins malformed JSON to the element (and byte) where it is.
  template <typename ParseOne>
  void parse_batch(ElementBatch& batch, const char* array, const char* noun, ParseOne parse_one);

  void parse_image(od::value& value, Element& el);
  /// LVIS's image fields: "coco_url" (the file name is its last two '/'-separated parts, as
  /// Detectron2's load_lvis_json) and the lists of category ids (lvis_fields.cpp).
  bool parse_lvis_image_field(od::raw_json_string key, od::value& value, Element& el,
                              uint32_t& seen, std::string& file_name);
  /// After an image's fields: its coco_url read and its lists stored (LVIS files only).
  void finish_lvis_image(Element& el, uint32_t seen, std::string& file_name);
  void parse_category(od::value& value, Element& el);
  /// LVIS's category fields: "synonyms", "frequency", "image_count" (lvis_fields.cpp).
  bool parse_lvis_category_field(od::raw_json_string key, od::value& value, Element& el,
                                 uint32_t& seen, Category& category);
  void parse_annotation(od::value& value, Element& el);  // coco_annotation_parser.cpp
  /// Reads an RLE segmentation into the dataset's pools: its index there, or -1 (after recording
  /// why) when it is invalid. `area` receives its pixel count.
  int32_t read_rle(od::object& object, Element& el, double& area);

  PoolMarks marks() const;
  void rollback(const PoolMarks& marks);
  /// Sends an element's problems (or its malformed-JSON error) to the problem list.
  void report(const Element& el, const ElementBatch& batch, size_t k, const char* fatal_at);

  CocoDatasetBuilder& b;
  od::parser json;
  std::vector<int64_t> scratch_counts;  // an uncompressed RLE being read
  std::string scratch_chars;            // a compressed RLE being read
  // The LVIS lists of the image being parsed: offsets into the dataset's image_cat_ids_.
  uint64_t neg_begin = 0, not_exhaustive_begin = 0;
  uint32_t neg_size = 0, not_exhaustive_size = 0;
};

}  // namespace detkit::data
