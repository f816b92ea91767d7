#include "detkit/data/coco/coco_element_parser.h"

#include <fmt/format.h>

#include <limits>

namespace detkit::data {

static_assert(kJsonPadding >= simdjson::SIMDJSON_PADDING, "batches must carry simdjson's padding");

namespace {

bool is_type_error(simdjson::error_code error) {
  return error == simdjson::INCORRECT_TYPE || error == simdjson::NUMBER_OUT_OF_RANGE;
}

}  // namespace

// ---- Element ----------------------------------------------------------------------------------

void CocoDatasetBuilder::Element::wrong_type(simdjson::error_code error, od::value& value,
                                             std::string_view path, const char* expected) {
  if (!is_type_error(error)) {
    fatal = error;
    return;
  }
  od::json_type type;
  if (simdjson::error_code e = value.type().get(type)) {
    fatal = e;
    return;
  }
  const char* got = "";
  switch (type) {
    case od::json_type::array:
      got = "an array";
      break;
    case od::json_type::object:
      got = "an object";
      break;
    case od::json_type::string:
      got = "a string";
      break;
    case od::json_type::null:
      got = "null";
      break;
    case od::json_type::boolean: {
      bool ignored;  // a misspelt literal ("tru") is malformed JSON, not a boolean
      if (simdjson::error_code e = value.get_bool().get(ignored)) {
        fatal = e;
        return;
      }
      got = "a boolean";
      break;
    }
    case od::json_type::number: {
      od::number_type number;
      if (simdjson::error_code e = value.get_number_type().get(number)) {
        fatal = e;  // a malformed number
        return;
      }
      got = number == od::number_type::floating_point_number ? "a floating-point number"
            : number == od::number_type::signed_integer      ? "an integer"
                                                             : "an integer out of range";
      break;
    }
  }
  problem(fmt::format("{}: expected {}, got {}", path, expected, got));
}

bool CocoDatasetBuilder::Element::get_int64(od::value& value, std::string_view path, int64_t& out) {
  simdjson::error_code e = value.get_int64().get(out);
  if (e) wrong_type(e, value, path, "an integer");
  return !e;
}

bool CocoDatasetBuilder::Element::get_double(od::value& value, std::string_view path, double& out) {
  simdjson::error_code e = value.get_double().get(out);
  if (e) wrong_type(e, value, path, "a number");
  return !e;
}

bool CocoDatasetBuilder::Element::get_string(od::value& value, std::string_view path,
                                             std::string_view& out) {
  simdjson::error_code e = value.get_string().get(out);
  if (e) wrong_type(e, value, path, "a string");
  return !e;
}

bool CocoDatasetBuilder::Element::get_object(od::value& value, std::string_view path,
                                             od::object& out) {
  simdjson::error_code e = value.get_object().get(out);
  if (e) wrong_type(e, value, path, "an object");
  return !e;
}

bool CocoDatasetBuilder::Element::get_array(od::value& value, std::string_view path,
                                            od::array& out) {
  simdjson::error_code e = value.get_array().get(out);
  if (e) wrong_type(e, value, path, "an array");
  return !e;
}

bool CocoDatasetBuilder::Element::first_time(uint32_t& seen, uint32_t bit, std::string_view key) {
  if (seen & bit) {
    problem(fmt::format(".{}: duplicate key", key));
    return false;
  }
  seen |= bit;
  return true;
}

// ---- Parser: batches, reporting, undo ---------------------------------------------------------

PoolMarks CocoDatasetBuilder::Parser::marks() const {
  const CocoDataset& ds = b.ds_;
  return {ds.names_.size(),      ds.coords_.size(),       ds.poly_coord_begin_.size(),
          ds.rles_.size(),       ds.rle_chars_.size(),    ds.rle_counts_.size(),
          ds.kpt_values_.size(), ds.image_cat_ids_.size()};
}

void CocoDatasetBuilder::Parser::rollback(const PoolMarks& m) {
  CocoDataset& ds = b.ds_;
  ds.names_.resize(m.names);
  ds.coords_.resize(m.coords);
  ds.poly_coord_begin_.resize(m.polygons);
  ds.rles_.resize(m.rles);
  ds.rle_chars_.resize(m.rle_chars);
  ds.rle_counts_.resize(m.rle_counts);
  ds.kpt_values_.resize(m.keypoints);
  ds.image_cat_ids_.resize(m.image_cat_ids);
}

void CocoDatasetBuilder::Parser::report(const Element& el, const ElementBatch& batch, size_t k,
                                        const char* fatal_at) {
  if (!el.failed() && el.problems.empty()) return;
  std::string where = fmt::format("{}[{}]", el.array, el.index);
  if (el.failed()) {
    uint64_t offset = fatal_at ? batch.file_offset(fatal_at) : batch.element_offset(k);
    b.problems_.add(fmt::format("malformed JSON at byte offset {} in {}: {}", offset, where,
                                simdjson::error_message(el.fatal)));
  }
  std::string id = el.has_id ? fmt::format(" ({} id {})", el.noun, el.id) : "";
  for (const std::string& problem : el.problems) b.problems_.add(where + problem + id);
}

template <typename ParseOne>
void CocoDatasetBuilder::Parser::parse_batch(ElementBatch& batch, const char* array,
                                             const char* noun, ParseOne parse_one) {
  // Elements are parsed as one document; when simdjson rejects the document as a whole (stage
  // 1: an unclosed string, bad UTF-8), they are parsed one at a time until the culprit is found.
  size_t k = 0;
  bool one_at_a_time = false;
  while (k < batch.size()) {
    std::string_view text = one_at_a_time ? batch.only(k) : batch.from(k);
    od::document doc;
    od::array elements;
    simdjson::error_code e =
        json.iterate(text.data(), text.size(), text.size() + kJsonPadding).get(doc);
    if (!e) e = doc.get_array().get(elements);
    if (e) {
      if (!one_at_a_time) {
        one_at_a_time = true;
        continue;
      }
      Element el{array, batch.first_index() + k, noun};
      el.fatal = e;
      report(el, batch, k, nullptr);
      ++k;
      one_at_a_time = false;
      continue;
    }
    size_t start = k;
    for (auto result : elements) {
      Element el{array, batch.first_index() + k, noun};
      od::value value;
      if (simdjson::error_code ve = result.get(value)) {
        el.fatal = ve;
      } else {
        parse_one(value, el);
      }
      const char* fatal_at = nullptr;
      if (el.failed() && doc.current_location().get(fatal_at)) fatal_at = nullptr;  // unknown
      report(el, batch, k, fatal_at);
      ++k;
      if (el.failed() || one_at_a_time || k == batch.size()) break;  // a fatal error: restart
    }
    if (k == start) {  // the document yielded nothing: take the element alone next time
      if (one_at_a_time) {
        Element el{array, batch.first_index() + k, noun};
        el.fatal = simdjson::TAPE_ERROR;
        report(el, batch, k, nullptr);
        ++k;
      }
      one_at_a_time = !one_at_a_time;
    }
  }
}

// ---- Builder entry points ---------------------------------------------------------------------

CocoDatasetBuilder::CocoDatasetBuilder(const std::string& json_file, const std::string& image_root,
                                       const CocoLoadOptions& options, ProblemList& problems)
    : options_(options), problems_(problems), parser_(std::make_unique<Parser>(*this)) {
  ds_.json_file_ = json_file;
  ds_.image_root_ = image_root;
  ds_.format_ = options.format;
  ds_.poly_coord_begin_.push_back(0);
}

CocoDatasetBuilder::~CocoDatasetBuilder() = default;

void CocoDatasetBuilder::add_images(ElementBatch& batch) {
  parser_->parse_batch(batch, "images", "image",
                       [this](od::value& v, Element& el) { parser_->parse_image(v, el); });
}

void CocoDatasetBuilder::add_annotations(ElementBatch& batch) {
  parser_->parse_batch(batch, "annotations", "annotation",
                       [this](od::value& v, Element& el) { parser_->parse_annotation(v, el); });
}

void CocoDatasetBuilder::add_categories(ElementBatch& batch) {
  parser_->parse_batch(batch, "categories", "category",
                       [this](od::value& v, Element& el) { parser_->parse_category(v, el); });
}

// ---- Images and categories --------------------------------------------------------------------

void CocoDatasetBuilder::Parser::parse_image(od::value& value, Element& el) {
  od::object object;
  if (!el.get_object(value, "", object)) return;
  enum : uint32_t { kId = 1, kFileName = 2, kHeight = 4, kWidth = 8 };
  uint32_t seen = 0, valid = 0;  // keys present; keys whose value has the right type
  int64_t height = 0, width = 0;
  std::string_view file_name;
  std::string lvis_file_name;  // from coco_url
  const bool lvis = b.options_.format == JsonFormat::kLvis;
  neg_begin = not_exhaustive_begin = b.ds_.image_cat_ids_.size();
  neg_size = not_exhaustive_size = 0;
  const PoolMarks undo = marks();
  for (auto member : object) {
    od::field field;
    if ((el.fatal = std::move(member).get(field))) break;
    od::raw_json_string key = field.key();  // compared as written: no escapes in known keys
    od::value v = field.value();
    uint32_t bit = 0;
    bool ok = false;
    if (lvis && parse_lvis_image_field(key, v, el, seen, lvis_file_name)) {
    } else if (lvis && key == "file_name") {
      // Not read: LVIS v0.5 names COCO 2014 files here; the file is coco_url's.
    } else if (key == "id") {
      ok = el.first_time(seen, bit = kId, "id") && el.get_int64(v, ".id", el.id);
      el.has_id = ok;
    } else if (key == "file_name") {
      ok = el.first_time(seen, bit = kFileName, "file_name") &&
           el.get_string(v, ".file_name", file_name);
    } else if (key == "height") {
      ok = el.first_time(seen, bit = kHeight, "height") && el.get_int64(v, ".height", height);
    } else if (key == "width") {
      ok = el.first_time(seen, bit = kWidth, "width") && el.get_int64(v, ".width", width);
    }
    if (ok) valid |= bit;
    if (el.failed()) break;
  }
  if (el.failed()) return rollback(undo);
  for (auto [bit, name] : {std::pair{kId, "id"}, {kHeight, "height"}, {kWidth, "width"}}) {
    if (!(seen & bit)) el.problem(fmt::format(": missing key \"{}\"", name));
  }
  if (lvis) {
    finish_lvis_image(el, seen, lvis_file_name);
    file_name = lvis_file_name;
  } else if (!(seen & kFileName)) {
    el.problem(": missing key \"file_name\"");
  }
  constexpr int64_t kMaxSide = std::numeric_limits<int32_t>::max();
  bool sized = (valid & kHeight) && (valid & kWidth);
  if ((valid & kHeight) && (height <= 0 || height > kMaxSide)) {
    el.problem(fmt::format(".height: must be a positive 32-bit integer, got {}", height));
    sized = false;
  }
  if ((valid & kWidth) && (width <= 0 || width > kMaxSide)) {
    el.problem(fmt::format(".width: must be a positive 32-bit integer, got {}", width));
    sized = false;
  }
  if (sized && height * width > b.options_.max_image_pixels) {
    el.problem(
        fmt::format(": width * height = {} * {} = {} pixels is over the limit of {} "
                    "(CocoLoadOptions::max_image_pixels)",
                    width, height, width * height, b.options_.max_image_pixels));
  }
  if ((valid & kFileName) && !lvis && !file_name_stays_inside_root(std::string(file_name))) {
    el.problem(fmt::format(".file_name: \"{}\" is not a path inside the image root", file_name));
  }
  if (!el.problems.empty()) {
    if (el.has_id) b.rejected_image_ids_.push_back(el.id);
    return rollback(undo);
  }
  CocoDataset& ds = b.ds_;
  ds.image_ids_.push_back(el.id);
  ds.heights_.push_back(static_cast<int32_t>(height));
  ds.widths_.push_back(static_cast<int32_t>(width));
  ds.name_begin_.push_back(ds.names_.size());
  ds.name_size_.push_back(static_cast<uint32_t>(file_name.size()));
  ds.names_.append(file_name);
  b.image_element_.push_back(el.index);
  if (lvis) {
    ds.neg_begin_.push_back(neg_begin);
    ds.neg_size_.push_back(neg_size);
    ds.not_exhaustive_begin_.push_back(not_exhaustive_begin);
    ds.not_exhaustive_size_.push_back(not_exhaustive_size);
  }
}

namespace {

// "keypoints": ["nose", "left_eye", ...].
void read_keypoint_names(od::value& value, CocoDatasetBuilder::Element& el,
                         std::vector<std::string>& names) {
  od::array array;
  if (!el.get_array(value, ".keypoints", array)) return;
  for (auto item : array) {
    od::value v;
    if ((el.fatal = item.get(v))) return;
    std::string_view name;
    if (!el.get_string(v, fmt::format(".keypoints[{}]", names.size()), name)) return;
    names.emplace_back(name);
  }
}

// "skeleton": [[16, 14], [14, 12], ...], 1-based keypoint numbers.
void read_skeleton(od::value& value, CocoDatasetBuilder::Element& el,
                   std::vector<std::array<int64_t, 2>>& edges) {
  od::array array;
  if (!el.get_array(value, ".skeleton", array)) return;
  for (auto item : array) {
    od::value v;
    if ((el.fatal = item.get(v))) return;
    const std::string path = fmt::format(".skeleton[{}]", edges.size());
    od::array pair;
    if (!el.get_array(v, path, pair)) return;
    std::array<int64_t, 2> edge{};
    size_t n = 0;
    for (auto end : pair) {
      od::value e;
      if ((el.fatal = end.get(e))) return;
      int64_t k;
      if (!el.get_int64(e, fmt::format("{}[{}]", path, n), k)) return;
      if (n < 2) edge[n] = k;
      ++n;
    }
    if (n != 2) {
      el.problem(fmt::format("{}: expected a pair of keypoint numbers, got {} values", path, n));
      return;
    }
    edges.push_back(edge);
  }
}

}  // namespace

void CocoDatasetBuilder::Parser::parse_category(od::value& value, Element& el) {
  od::object object;
  if (!el.get_object(value, "", object)) return;
  enum : uint32_t { kId = 1, kName = 2, kKeypoints = 4, kSkeleton = 8 };
  uint32_t seen = 0;
  std::string_view name_view;
  Category category;
  for (auto member : object) {
    od::field field;
    if ((el.fatal = std::move(member).get(field))) break;
    od::raw_json_string key = field.key();  // compared as written: no escapes in known keys
    od::value v = field.value();
    if (key == "id") {
      if (el.first_time(seen, kId, "id") && el.get_int64(v, ".id", el.id)) el.has_id = true;
    } else if (key == "name") {
      // The view dies with the next string read.
      if (el.first_time(seen, kName, "name") && el.get_string(v, ".name", name_view))
        category.name.assign(name_view);
    } else if (key == "keypoints") {
      if (el.first_time(seen, kKeypoints, "keypoints"))
        read_keypoint_names(v, el, category.keypoints);
    } else if (key == "skeleton") {
      if (el.first_time(seen, kSkeleton, "skeleton")) read_skeleton(v, el, category.skeleton);
    } else if (b.options_.format == JsonFormat::kLvis) {
      parse_lvis_category_field(key, v, el, seen, category);
    }
    if (el.failed()) return;
  }
  if (!(seen & kId)) el.problem(": missing key \"id\"");
  if (!(seen & kName)) el.problem(": missing key \"name\"");
  const auto num_keypoints = static_cast<int64_t>(category.keypoints.size());
  for (size_t e = 0; e < category.skeleton.size(); ++e) {
    for (int64_t k : category.skeleton[e]) {
      if (k < 1 || k > num_keypoints) {
        el.problem(fmt::format(
            ".skeleton[{}]: keypoint number {} is outside 1..{} (the category's keypoints)", e, k,
            num_keypoints));
      }
    }
  }
  if (!el.problems.empty()) {
    if (el.has_id) b.rejected_category_ids_.push_back(el.id);
    return;
  }
  category.id = el.id;
  b.ds_.categories_.push_back(std::move(category));
  b.category_element_.push_back(el.index);
}

}  // namespace detkit::data
