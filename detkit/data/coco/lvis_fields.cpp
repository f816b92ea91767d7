// The fields LVIS adds to COCO's images and categories (JsonFormat::kLvis):
//   images:     "coco_url" (the file name), "neg_category_ids", "not_exhaustive_category_ids";
//   categories: "synonyms", "frequency" ("r", "c" or "f"), "image_count".
#include <fmt/format.h>

#include "detkit/data/coco/coco_element_parser.h"

namespace detkit::data {
namespace {

// Bits of the `seen` masks above those parse_image and parse_category use for COCO's keys.
enum : uint32_t { kCocoUrl = 16, kNegIds = 32, kNotExhaustiveIds = 64, kCocoUrlRead = 128 };
enum : uint32_t { kSynonyms = 16, kFrequency = 32, kImageCount = 64 };

using Element = CocoDatasetBuilder::Element;

// [id, id, ...] appended to `pool`; `count` gets how many.
bool read_id_list(od::value& value, Element& el, const char* path, PodArray<int64_t>& pool,
                  uint32_t& count) {
  od::array array;
  if (!el.get_array(value, path, array)) return false;
  count = 0;
  for (auto item : array) {
    od::value v;
    if ((el.fatal = item.get(v))) return false;
    int64_t id;
    if (!el.get_int64(v, fmt::format("{}[{}]", path, count), id)) return false;
    pool.push_back(id);
    ++count;
  }
  return true;
}

// ["name", ...].
bool read_string_list(od::value& value, Element& el, const char* path,
                      std::vector<std::string>& out) {
  od::array array;
  if (!el.get_array(value, path, array)) return false;
  for (auto item : array) {
    od::value v;
    if ((el.fatal = item.get(v))) return false;
    std::string_view s;
    if (!el.get_string(v, fmt::format("{}[{}]", path, out.size()), s)) return false;
    out.emplace_back(s);
  }
  return true;
}

}  // namespace

bool CocoDatasetBuilder::Parser::parse_lvis_image_field(od::raw_json_string key, od::value& value,
                                                        Element& el, uint32_t& seen,
                                                        std::string& file_name) {
  CocoDataset& ds = b.ds_;
  if (key == "coco_url") {
    std::string_view url;
    if (el.first_time(seen, kCocoUrl, "coco_url") && el.get_string(value, ".coco_url", url)) {
      file_name.assign(url);  // the URL for now; finish_lvis_image keeps its last two parts
      seen |= kCocoUrlRead;
    }
  } else if (key == "neg_category_ids") {
    if (el.first_time(seen, kNegIds, "neg_category_ids")) {
      neg_begin = ds.image_cat_ids_.size();
      read_id_list(value, el, ".neg_category_ids", ds.image_cat_ids_, neg_size);
    }
  } else if (key == "not_exhaustive_category_ids") {
    if (el.first_time(seen, kNotExhaustiveIds, "not_exhaustive_category_ids")) {
      not_exhaustive_begin = ds.image_cat_ids_.size();
      read_id_list(value, el, ".not_exhaustive_category_ids", ds.image_cat_ids_,
                   not_exhaustive_size);
    }
  } else {
    return false;
  }
  return true;
}

void CocoDatasetBuilder::Parser::finish_lvis_image(Element& el, uint32_t seen,
                                                   std::string& file_name) {
  if (!(seen & kCocoUrl)) {
    el.problem(": missing key \"coco_url\" (LVIS images are named by it)");
    return;
  }
  if (!(seen & kCocoUrlRead)) return;  // not a string: reported
  // Detectron2's get_file_name: url.split("/")[-2:] joined under the image root.
  const std::string url = file_name;
  const size_t last = url.rfind('/');
  if (last == std::string::npos || last + 1 == url.size()) {
    el.problem(fmt::format(".coco_url: \"{}\" does not end in <folder>/<file>", url));
    return;
  }
  const size_t before = last == 0 ? std::string::npos : url.rfind('/', last - 1);
  const size_t folder_begin = before == std::string::npos ? 0 : before + 1;
  const std::string folder = url.substr(folder_begin, last - folder_begin);
  file_name = folder.empty() ? url.substr(last + 1) : folder + url.substr(last);
  if (!file_name_stays_inside_root(file_name)) {
    el.problem(
        fmt::format(".coco_url: \"{}\" gives \"{}\", which is not a path inside the image root",
                    url, file_name));
  }
}

bool CocoDatasetBuilder::Parser::parse_lvis_category_field(od::raw_json_string key,
                                                           od::value& value, Element& el,
                                                           uint32_t& seen, Category& category) {
  if (key == "synonyms") {
    if (el.first_time(seen, kSynonyms, "synonyms"))
      read_string_list(value, el, ".synonyms", category.synonyms);
  } else if (key == "frequency") {
    std::string_view f;
    if (el.first_time(seen, kFrequency, "frequency") && el.get_string(value, ".frequency", f)) {
      if (f == "r" || f == "c" || f == "f") {
        category.frequency.assign(f);
      } else {
        el.problem(fmt::format(".frequency: must be \"r\", \"c\" or \"f\", got \"{}\"", f));
      }
    }
  } else if (key == "image_count") {
    int64_t count;
    if (el.first_time(seen, kImageCount, "image_count") &&
        el.get_int64(value, ".image_count", count)) {
      if (count >= 0) {
        category.image_count = count;
      } else {
        el.problem(fmt::format(".image_count: must be >= 0, got {}", count));
      }
    }
  } else {
    return false;
  }
  return true;
}

}  // namespace detkit::data
