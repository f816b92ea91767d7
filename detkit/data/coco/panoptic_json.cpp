// Reading COCO panoptic files: the top-level arrays streamed (json_stream.h), each batch of
// elements parsed with simdjson On-Demand, references between arrays checked once the file is
// read (categories often come last).
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <unordered_map>

#include "detkit/data/coco/coco.h"
#include "detkit/data/coco/json_stream.h"
#include "detkit/data/coco/panoptic_dataset.h"
#include "detkit/utils/error.h"

namespace detkit::data {

namespace od = simdjson::ondemand;

class PanopticJsonReader {
 public:
  static PanopticDataset read(const std::string& json_file, const std::string& image_root,
                              const std::string& panoptic_root, bool categories_only) {
    PanopticDataset ds;
    ds.json_file_ = json_file;
    ds.image_root_ = image_root;
    ds.panoptic_root_ = panoptic_root;
    PanopticJsonReader(ds, categories_only).read_file();
    return ds;
  }

 private:
  PanopticJsonReader(PanopticDataset& ds, bool categories_only) : ds_(ds) {
    keys_ = categories_only ? std::vector<std::string>{"categories"}
                            : std::vector<std::string>{"images", "annotations", "categories"};
  }

  void read_file() {
    const std::vector<TopLevelValue> values = stream_top_level_arrays(
        ds_.json_file_, keys_,
        [&](size_t key, ElementBatch& batch) { parse_batch(batch, keys_[key].c_str()); });
    for (const std::string& key : keys_) {
      const size_t count = std::count_if(values.begin(), values.end(),
                                         [&](const TopLevelValue& v) { return v.key == key; });
      if (count == 0) fail(fmt::format("missing top-level key \"{}\"", key));
      if (count > 1) fail(fmt::format("top-level key \"{}\" appears twice", key));
      for (const TopLevelValue& v : values)
        if (v.key == key && v.kind != JsonKind::kArray)
          fail(fmt::format("{}: expected an array, got {}", key, json_kind_name(v.kind)));
    }
    number_categories();
    if (keys_.size() > 1) resolve_annotations();
  }

  // What is known of the element being parsed, for messages.
  struct Place {
    const char* array;
    uint64_t index;
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ds_.json_file_ + ": " + what);
  }
  [[noreturn]] void fail_at(const Place& at, const std::string& what) const {
    fail(fmt::format("{}[{}]{}", at.array, at.index, what));
  }
  void check(simdjson::error_code e, const Place& at, std::string_view path) const {
    if (e) fail_at(at, fmt::format("{}: {}", path, simdjson::error_message(e)));
  }

  void parse_batch(ElementBatch& batch, const char* array) {
    const std::string_view text = batch.from(0);
    od::document doc;
    od::array elements;
    Place at{array, batch.first_index()};
    check(parser_.iterate(text.data(), text.size(), text.size() + kJsonPadding).get(doc), at, "");
    check(doc.get_array().get(elements), at, "");
    for (auto element : elements) {
      od::object object;
      check(element.get_object().get(object), at, "");
      if (std::string_view(array) == "images") parse_image(object, at);
      if (std::string_view(array) == "annotations") parse_annotation(object, at);
      if (std::string_view(array) == "categories") parse_category(object, at);
      ++at.index;
    }
  }

  void parse_category(od::object& object, const Place& at) {
    PanopticCategory category;
    bool has_id = false, has_name = false;
    for (auto member : object) {
      od::field field;
      check(std::move(member).get(field), at, "");
      const od::raw_json_string key = field.key();
      od::value v = field.value();
      if (key == "id") {
        check(v.get_int64().get(category.id), at, ".id");
        has_id = true;
      } else if (key == "name") {
        std::string_view name;
        check(v.get_string().get(name), at, ".name");
        category.name = std::string(name);
        has_name = true;
      } else if (key == "isthing") {
        int64_t isthing = 0;
        check(v.get_int64().get(isthing), at, ".isthing");
        category.isthing = isthing != 0;
      }
    }
    if (!has_id || !has_name)
      fail_at(at, !has_id ? ": missing key \"id\"" : ": missing key \"name\"");
    category_index_.push_back(at.index);
    ds_.categories_.push_back(std::move(category));
  }

  void parse_image(od::object& object, const Place& at) {
    int64_t id = 0, height = 0, width = 0;
    bool has_id = false;
    for (auto member : object) {
      od::field field;
      check(std::move(member).get(field), at, "");
      const od::raw_json_string key = field.key();
      od::value v = field.value();
      if (key == "id") {
        check(v.get_int64().get(id), at, ".id");
        has_id = true;
      } else if (key == "height") {
        check(v.get_int64().get(height), at, ".height");
      } else if (key == "width") {
        check(v.get_int64().get(width), at, ".width");
      }
    }
    if (!has_id) fail_at(at, ": missing key \"id\"");
    if (height <= 0 || width <= 0 || height > INT32_MAX || width > INT32_MAX)
      fail_at(at, fmt::format(": height and width must be positive, got {} and {} (image id {})",
                              height, width, id));
    auto [it, inserted] = image_sizes_.emplace(id, ImageEntry{at.index, int(height), int(width)});
    if (!inserted)
      fail_at(at,
              fmt::format(": image id {} listed twice (also images[{}])", id, it->second.index));
  }

  void parse_annotation(od::object& object, const Place& at) {
    int64_t image_id = 0;
    bool has_image_id = false, has_file_name = false, has_segments = false;
    std::string_view file_name;
    for (auto member : object) {
      od::field field;
      check(std::move(member).get(field), at, "");
      const od::raw_json_string key = field.key();
      od::value v = field.value();
      if (key == "image_id") {
        check(v.get_int64().get(image_id), at, ".image_id");
        has_image_id = true;
      } else if (key == "file_name") {
        if (has_file_name) fail_at(at, ".file_name: duplicate key");
        check(v.get_string().get(file_name), at, ".file_name");
        if (!file_name_stays_inside_root(std::string(file_name)))
          fail_at(at, fmt::format(".file_name: \"{}\" is not a file inside the panoptic root",
                                  file_name));
        ds_.names_.append(file_name);
        has_file_name = true;
      } else if (key == "segments_info") {
        if (has_segments) fail_at(at, ".segments_info: duplicate key");
        od::array segments;
        check(v.get_array().get(segments), at, ".segments_info");
        uint64_t j = 0;
        for (auto segment : segments) parse_segment(segment, at, j++);
        has_segments = true;
      }
    }
    for (auto [has, name] : {std::pair{has_image_id, "image_id"},
                             {has_file_name, "file_name"},
                             {has_segments, "segments_info"}}) {
      if (!has) fail_at(at, fmt::format(": missing key \"{}\"", name));
    }
    ds_.ids_.push_back(image_id);
    ds_.name_begin_.push_back(ds_.names_.size());
    ds_.segment_begin_.push_back(ds_.segments_.size());
  }

  void parse_segment(simdjson::simdjson_result<od::value> element, const Place& at, uint64_t j) {
    const std::string path = fmt::format(".segments_info[{}]", j);
    od::object object;
    check(element.get_object().get(object), at, path);
    PanopticSegment s;
    bool has_id = false, has_category = false;
    for (auto member : object) {
      od::field field;
      check(std::move(member).get(field), at, path);
      const od::raw_json_string key = field.key();
      od::value v = field.value();
      if (key == "id") {
        check(v.get_int64().get(s.id), at, path + ".id");
        has_id = true;
      } else if (key == "category_id") {
        check(v.get_int64().get(s.category_id), at, path + ".category_id");
        has_category = true;
      } else if (key == "iscrowd") {
        int64_t iscrowd = 0;
        check(v.get_int64().get(iscrowd), at, path + ".iscrowd");
        s.iscrowd = iscrowd != 0;
      } else if (key == "area") {
        check(v.get_double().get(s.area), at, path + ".area");
      } else if (key == "bbox") {
        od::array box;
        check(v.get_array().get(box), at, path + ".bbox");
        size_t k = 0;
        for (auto number : box) {
          double x = 0;
          check(number.get_double().get(x), at, path + ".bbox");
          if (k < 4) s.bbox[k] = x;
          ++k;
        }
        if (k != 4) fail_at(at, fmt::format("{}.bbox: expected 4 numbers, got {}", path, k));
      }
    }
    if (!has_id || !has_category)
      fail_at(at, fmt::format("{}: missing key \"{}\"", path, has_id ? "category_id" : "id"));
    if (s.id <= 0 || s.id >= (int64_t{1} << 24))
      fail_at(at, fmt::format("{}.id: {} is not a PNG segment id (1 .. 2^24 - 1)", path, s.id));
    ds_.segments_.push_back(s);
  }

  // Categories sorted by id and numbered; an id listed twice is an error.
  void number_categories() {
    std::vector<size_t> order(ds_.categories_.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return ds_.categories_[a].id < ds_.categories_[b].id;
    });
    std::vector<PanopticCategory> sorted;
    for (size_t k = 0; k < order.size(); ++k) {
      const PanopticCategory& c = ds_.categories_[order[k]];
      if (k > 0 && sorted.back().id == c.id) {
        fail(fmt::format("categories[{}]: category id {} listed twice (also categories[{}])",
                         std::max(category_index_[order[k]], category_index_[order[k - 1]]), c.id,
                         std::min(category_index_[order[k]], category_index_[order[k - 1]])));
      }
      sorted.push_back(c);
    }
    ds_.categories_ = std::move(sorted);
  }

  // Each record's image and segment categories, now that every array is read.
  void resolve_annotations() {
    std::unordered_map<int64_t, int32_t> contiguous;
    for (size_t k = 0; k < ds_.categories_.size(); ++k)
      contiguous.emplace(ds_.categories_[k].id, static_cast<int32_t>(k));
    std::unordered_map<int64_t, uint64_t> annotation_of_image;
    for (size_t i = 0; i < ds_.ids_.size(); ++i) {
      const int64_t image_id = ds_.ids_[i];
      auto [seen, inserted] = annotation_of_image.emplace(image_id, i);
      if (!inserted) {
        fail(fmt::format("annotations[{}]: image id {} listed twice (also annotations[{}])", i,
                         image_id, seen->second));
      }
      auto image = image_sizes_.find(image_id);
      if (image == image_sizes_.end())
        fail(fmt::format("annotations[{}]: image id {} is not in images", i, image_id));
      ds_.heights_.push_back(image->second.height);
      ds_.widths_.push_back(image->second.width);
      std::unordered_map<int64_t, uint64_t> segment_ids;
      for (uint64_t s = ds_.segment_begin_[i]; s < ds_.segment_begin_[i + 1]; ++s) {
        PanopticSegment& segment = ds_.segments_[s];
        const uint64_t j = s - ds_.segment_begin_[i];
        auto category = contiguous.find(segment.category_id);
        if (category == contiguous.end()) {
          fail(fmt::format(
              "annotations[{}].segments_info[{}]: category_id {} is not in categories (image id "
              "{})",
              i, j, segment.category_id, image_id));
        }
        segment.contiguous_id = category->second;
        segment.isthing = ds_.categories_[category->second].isthing;
        auto [other, fresh] = segment_ids.emplace(segment.id, j);
        if (!fresh) {
          fail(
              fmt::format("annotations[{}].segments_info[{}]: segment id {} listed twice (also "
                          "segments_info[{}]; image id {})",
                          i, j, segment.id, other->second, image_id));
        }
      }
    }
  }

  struct ImageEntry {
    uint64_t index;  // in "images"
    int height, width;
  };

  PanopticDataset& ds_;
  std::vector<std::string> keys_;
  od::parser parser_;
  std::vector<uint64_t> category_index_;  // position in "categories" of each category read
  std::unordered_map<int64_t, ImageEntry> image_sizes_;
};

PanopticDataset load_coco_panoptic_json(const std::string& json_file, const std::string& image_root,
                                        const std::string& panoptic_root) {
  return PanopticJsonReader::read(json_file, image_root, panoptic_root, /*categories_only=*/false);
}

std::vector<PanopticCategory> read_panoptic_categories(const std::string& json_file) {
  return PanopticJsonReader::read(json_file, "", "", /*categories_only=*/true).categories();
}

}  // namespace detkit::data
