// Parses one COCO annotation: ids, box, crowd flag, area and segmentation (polygons or RLE).
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "detkit/data/coco/coco_element_parser.h"
#include "detkit/structures/mask_ops.h"

namespace detkit::data {
namespace {

enum : uint32_t {
  kId = 1,
  kImageId = 2,
  kCategoryId = 4,
  kBbox = 8,
  kIscrowd = 16,
  kArea = 32,
  kSegmentation = 64,
  kCounts = 128,
  kSize = 256,
  kKeypoints = 512,
  kNumKeypoints = 1024,
};

// What one annotation declares, before it is committed to the dataset.
struct AnnotationFields {
  uint32_t seen = 0, valid = 0;  // keys present; keys whose value was read
  int64_t image_id = 0, category_id = 0, iscrowd = 0;
  std::array<double, 4> bbox{};
  double area = 0;
  uint32_t poly_begin = 0, poly_count = 0;  // polygons kept
  size_t dropped_polygons = 0;
  int64_t first_dropped = -1;  // index in "segmentation" of the first polygon dropped
  bool had_polygons = false;  // the segmentation listed at least one polygon
  int32_t rle = -1;
  double rle_area = 0;
  uint32_t kpt_begin = 0, kpt_count = 0;  // values kept in the keypoint pool
  int64_t num_keypoints = 0;
};

using Element = CocoDatasetBuilder::Element;

// Detectron2's PolygonMasks.area(): the shoelace areas of the polygons, summed.
double polygons_area(const PodArray<uint64_t>& begins, const PodArray<double>& coords,
                     uint32_t first, uint32_t count) {
  double total = 0;
  for (uint32_t p = first; p < first + count; ++p) {
    const double* xy = coords.data() + begins[p];
    size_t n = (begins[p + 1] - begins[p]) / 2;
    double twice = 0;
    for (size_t i = 0, j = n - 1; i < n; j = i++) {
      twice += xy[2 * j] * xy[2 * i + 1] - xy[2 * i] * xy[2 * j + 1];
    }
    total += std::abs(twice) / 2;
  }
  return total;
}

// Calls take(k, x) for each number x of the array at `path` ("." + key); false (after naming the
// item) at the first item that is not a number or that take refuses. `count` gets the items read.
template <typename Take>
bool read_numbers(od::value& value, Element& el, const char* path, size_t& count, Take take) {
  od::array array;
  if (!el.get_array(value, path, array)) return false;
  count = 0;
  for (auto item : array) {
    double x;
    if (simdjson::error_code e = item.get_double().get(x)) {
      od::value bad;
      if ((el.fatal = item.get(bad))) return false;
      el.wrong_type(e, bad, fmt::format("{}[{}]", path, count), "a number");
      return false;
    }
    if (!take(count, x)) return false;
    ++count;
  }
  return true;
}

// [x, y, width, height]: exactly four numbers.
bool read_bbox(od::value& value, Element& el, std::array<double, 4>& box) {
  size_t n = 0;
  if (!read_numbers(value, el, ".bbox", n, [&](size_t k, double x) {
        if (k < 4) box[k] = x;
        return true;
      }))
    return false;
  if (n != 4) {
    el.problem(fmt::format(".bbox: expected 4 numbers [x, y, width, height], got {}", n));
    return false;
  }
  return true;
}

// 0 or 1 (or false / true).
bool read_iscrowd(od::value& value, Element& el, int64_t& iscrowd) {
  od::json_type type;
  if ((el.fatal = value.type().get(type))) return false;
  if (type == od::json_type::boolean) {
    bool flag;
    if ((el.fatal = value.get_bool().get(flag))) return false;
    iscrowd = flag;
    return true;
  }
  if (!el.get_int64(value, ".iscrowd", iscrowd)) return false;
  if (iscrowd != 0 && iscrowd != 1) {
    el.problem(fmt::format(".iscrowd: must be 0 or 1, got {}", iscrowd));
    return false;
  }
  return true;
}

// Polygons [[x0, y0, x1, y1, ...], ...]; those with fewer than 3 points or an odd number of
// coordinates are dropped and counted, as Detectron2 does.
void read_polygons(od::array& polygons, Element& el, AnnotationFields& f,
                   PodArray<uint64_t>& begins, PodArray<double>& coords) {
  size_t p = 0;
  for (auto item : polygons) {
    od::value polygon;
    if ((el.fatal = item.get(polygon))) return;
    od::array numbers;
    if (simdjson::error_code e = polygon.get_array().get(numbers)) {
      el.wrong_type(e, polygon, fmt::format(".segmentation[{}]", p),
                    "a polygon (array of numbers)");
      if (el.failed()) return;
      ++p;
      continue;
    }
    const size_t start = coords.size();
    bool bad = false;
    for (auto number : numbers) {
      double x;
      if (simdjson::error_code e = number.get_double().get(x)) {
        od::value wrong;
        if ((el.fatal = number.get(wrong))) return;
        el.wrong_type(e, wrong, fmt::format(".segmentation[{}][{}]", p, coords.size() - start),
                      "a number");
        if (el.failed()) return;
        bad = true;
        break;
      }
      coords.push_back(x);
    }
    const size_t n = coords.size() - start;
    if (bad || n < 6 || n % 2 != 0) {
      coords.resize(start);
      f.dropped_polygons += bad ? 0 : 1;
      if (!bad && f.first_dropped < 0) f.first_dropped = static_cast<int64_t>(p);
    } else {
      begins.push_back(coords.size());
      ++f.poly_count;
    }
    ++p;
  }
  f.had_polygons = p > 0;
}

// "keypoints": [x0, y0, v0, x1, y1, v1, ...], v in {0, 1, 2}, into the keypoint pool.
bool read_keypoints(od::value& value, Element& el, AnnotationFields& f, PodArray<double>& pool) {
  f.kpt_begin = static_cast<uint32_t>(pool.size());
  size_t n = 0;
  if (!read_numbers(value, el, ".keypoints", n, [&](size_t k, double x) {
        if (k % 3 == 2 && x != 0 && x != 1 && x != 2) {
          el.problem(fmt::format(
              ".keypoints[{}]: visibility of keypoint {} must be 0, 1 or 2, got {}", k, k / 3, x));
          return false;
        }
        pool.push_back(x);
        return true;
      }))
    return false;
  if (n % 3 != 0) {
    el.problem(
        fmt::format(".keypoints: {} values is not a multiple of 3 (x, y, v per keypoint)", n));
    return false;
  }
  if (pool.size() > std::numeric_limits<uint32_t>::max()) {
    el.problem(".keypoints: more keypoint values in the file than detkit can hold (2^32)");
    return false;
  }
  f.kpt_count = static_cast<uint32_t>(n);
  return true;
}

// Detectron2's load_lvis_json asserts that every LVIS annotation has polygons, all valid.
void check_lvis_segmentation(Element& el, const AnnotationFields& f) {
  if (!(f.seen & kSegmentation)) {
    el.problem(": missing key \"segmentation\" (LVIS annotations have polygons)");
  } else if (f.rle >= 0) {
    el.problem(".segmentation: an RLE; LVIS annotations have polygons");
  } else if (f.first_dropped >= 0) {
    el.problem(fmt::format(
        ".segmentation[{}]: a polygon with fewer than 3 points or an odd number of coordinates "
        "(Detectron2's load_lvis_json refuses it)",
        f.first_dropped));
  } else if (!f.had_polygons && el.problems.empty()) {
    el.problem(".segmentation: no polygon (LVIS annotations have at least one)");
  }
}

}  // namespace

// {"counts": "<compressed>" or [n0, n1, ...], "size": [height, width]}, checked with mask_ops.
int32_t CocoDatasetBuilder::Parser::read_rle(od::object& object, Element& el, double& area) {
  std::vector<int64_t>& counts = scratch_counts;
  std::string& chars = scratch_chars;
  uint32_t seen = 0;
  bool have_counts = false, have_size = false, compressed = false;
  std::string_view counts_string;
  int64_t size[2] = {0, 0};
  counts.clear();
  for (auto member : object) {
    od::field field;
    if ((el.fatal = std::move(member).get(field))) return -1;
    od::raw_json_string key = field.key();
    od::value v = field.value();
    if (key == "counts" && el.first_time(seen, kCounts, "segmentation.counts")) {
      od::json_type type;
      if ((el.fatal = v.type().get(type))) return -1;
      if (type == od::json_type::string) {
        compressed = have_counts = el.get_string(v, ".segmentation.counts", counts_string);
        if (have_counts) chars.assign(counts_string);  // the view dies with the next string
      } else if (od::array array; el.get_array(v, ".segmentation.counts", array)) {
        have_counts = true;
        for (auto item : array) {
          int64_t n;
          simdjson::error_code e = item.get_int64().get(n);
          if (e || n < 0) {
            od::value bad;
            if ((el.fatal = item.get(bad))) return -1;
            std::string path = fmt::format(".segmentation.counts[{}]", counts.size());
            if (e) el.wrong_type(e, bad, path, "a non-negative integer");
            if (!e) el.problem(fmt::format("{}: must be >= 0, got {}", path, n));
            have_counts = false;
            break;
          }
          counts.push_back(n);
        }
      }
    } else if (key == "size" && el.first_time(seen, kSize, "segmentation.size")) {
      od::array array;
      if (el.get_array(v, ".segmentation.size", array)) {
        size_t n = 0;
        have_size = true;
        for (auto item : array) {
          int64_t x = 0;
          simdjson::error_code e = item.get_int64().get(x);
          if (e) {
            od::value bad;
            if ((el.fatal = item.get(bad))) return -1;
            el.wrong_type(e, bad, fmt::format(".segmentation.size[{}]", n), "an integer");
            have_size = false;
            break;
          }
          if (n < 2) size[n] = x;
          ++n;
        }
        if (have_size && n != 2) {
          el.problem(fmt::format(".segmentation.size: expected [height, width], got {} values", n));
          have_size = false;
        }
      }
    }
    if (el.failed()) return -1;
  }
  if (!(seen & kCounts)) el.problem(".segmentation: missing key \"counts\"");
  if (!(seen & kSize)) el.problem(".segmentation: missing key \"size\"");
  if (!have_counts || !have_size) return -1;
  const int64_t h = size[0], w = size[1];
  constexpr int64_t kMaxSide = std::numeric_limits<int32_t>::max();
  if (h <= 0 || w <= 0 || h > kMaxSide || w > kMaxSide) {
    el.problem(
        fmt::format(".segmentation.size: must be two positive integers, got [{}, {}]", h, w));
    return -1;
  }
  try {
    mask_ops::RLE rle =
        compressed ? mask_ops::from_string(chars, h, w) : mask_ops::from_uncompressed(counts, h, w);
    area = static_cast<double>(mask_ops::area(rle));
  } catch (const Error& e) {
    el.problem(fmt::format(".segmentation: {}", e.what()));
    return -1;
  }
  CocoDataset& ds = b.ds_;
  CocoDataset::Rle stored{static_cast<int32_t>(h), static_cast<int32_t>(w), compressed, 0, 0};
  if (compressed) {
    stored.begin = ds.rle_chars_.size();
    stored.size = static_cast<uint32_t>(chars.size());
    ds.rle_chars_ += chars;
  } else {
    stored.begin = ds.rle_counts_.size();
    stored.size = static_cast<uint32_t>(counts.size());
    for (int64_t n : counts) ds.rle_counts_.push_back(static_cast<uint32_t>(n));
  }
  ds.rles_.push_back(stored);
  return static_cast<int32_t>(ds.rles_.size() - 1);
}

void CocoDatasetBuilder::Parser::parse_annotation(od::value& value, Element& el) {
  od::object object;
  if (!el.get_object(value, "", object)) return;
  CocoDataset& ds = b.ds_;
  AnnotationFields f;
  f.poly_begin = static_cast<uint32_t>(ds.poly_coord_begin_.size() - 1);
  const PoolMarks undo = marks();
  for (auto member : object) {
    od::field field;
    if ((el.fatal = std::move(member).get(field))) break;
    od::raw_json_string key = field.key();  // compared as written: no escapes in known keys
    od::value v = field.value();
    uint32_t bit = 0;
    bool ok = false;
    if (key == "id") {
      ok = el.first_time(f.seen, bit = kId, "id") && el.get_int64(v, ".id", el.id);
      el.has_id = ok;
    } else if (key == "image_id") {
      ok = el.first_time(f.seen, bit = kImageId, "image_id") &&
           el.get_int64(v, ".image_id", f.image_id);
    } else if (key == "category_id") {
      ok = el.first_time(f.seen, bit = kCategoryId, "category_id") &&
           el.get_int64(v, ".category_id", f.category_id);
    } else if (key == "bbox") {
      ok = el.first_time(f.seen, bit = kBbox, "bbox") && read_bbox(v, el, f.bbox);
    } else if (key == "iscrowd" && b.options_.format == JsonFormat::kLvis) {
      // Not read: Detectron2's load_lvis_json has no crowd regions.
    } else if (key == "iscrowd") {
      ok = el.first_time(f.seen, bit = kIscrowd, "iscrowd") && read_iscrowd(v, el, f.iscrowd);
    } else if (key == "area") {
      ok = el.first_time(f.seen, bit = kArea, "area") && el.get_double(v, ".area", f.area);
    } else if (key == "keypoints") {
      ok = el.first_time(f.seen, bit = kKeypoints, "keypoints") &&
           read_keypoints(v, el, f, ds.kpt_values_);
    } else if (key == "num_keypoints") {
      ok = el.first_time(f.seen, bit = kNumKeypoints, "num_keypoints") &&
           el.get_int64(v, ".num_keypoints", f.num_keypoints);
      if (ok && (f.num_keypoints < 0 || f.num_keypoints > std::numeric_limits<int32_t>::max())) {
        el.problem(fmt::format(".num_keypoints: must be >= 0, got {}", f.num_keypoints));
        ok = false;
      }
    } else if (key == "segmentation" &&
               el.first_time(f.seen, bit = kSegmentation, "segmentation")) {
      od::json_type type;
      if ((el.fatal = v.type().get(type))) break;
      if (type == od::json_type::array) {
        od::array polygons;
        if (el.get_array(v, ".segmentation", polygons)) {
          read_polygons(polygons, el, f, ds.poly_coord_begin_, ds.coords_);
        }
      } else if (type == od::json_type::object) {
        od::object rle;
        if (el.get_object(v, ".segmentation", rle)) {
          f.rle = read_rle(rle, el, f.rle_area);
        }
      } else if (type == od::json_type::null) {
        bool is_null;  // checks the literal
        el.fatal = v.is_null().get(is_null);
      } else {
        el.wrong_type(simdjson::INCORRECT_TYPE, v, ".segmentation",
                      "polygons (an array of arrays) or an RLE object");
      }
    }
    if (ok) f.valid |= bit;
    if (el.failed()) break;
  }
  if (el.failed()) return rollback(undo);
  for (auto [bit, name] : {std::pair{kId, "id"},
                           {kImageId, "image_id"},
                           {kCategoryId, "category_id"},
                           {kBbox, "bbox"}}) {
    if (!(f.seen & bit)) el.problem(fmt::format(": missing key \"{}\"", name));
  }
  if ((f.valid & kBbox) && (f.bbox[2] < 0 || f.bbox[3] < 0)) {
    el.problem(fmt::format(".bbox: width and height must be >= 0, got [{}, {}, {}, {}]", f.bbox[0],
                           f.bbox[1], f.bbox[2], f.bbox[3]));
  }
  if (b.options_.format == JsonFormat::kLvis) check_lvis_segmentation(el, f);
  if ((f.valid & kKeypoints) && !(f.valid & kNumKeypoints)) {
    f.num_keypoints = 0;  // what pycocotools' keypoint evaluation reads; counted when absent
    for (uint32_t k = 2; k < f.kpt_count; k += 3)
      f.num_keypoints += ds.kpt_values_[f.kpt_begin + k] > 0;
  }
  if (!el.problems.empty()) return rollback(undo);
  if (f.had_polygons && f.poly_count == 0) {  // Detectron2 ignores the instance
    ds.stats_.dropped_polygons += f.dropped_polygons;
    ++ds.stats_.dropped_annotations;
    return rollback(undo);
  }
  ds.stats_.dropped_polygons += f.dropped_polygons;
  if (!(f.valid & kArea)) {  // Detectron2's convert_to_coco_dict fallback
    f.area = f.poly_count
                 ? polygons_area(ds.poly_coord_begin_, ds.coords_, f.poly_begin, f.poly_count)
             : f.rle >= 0 ? f.rle_area
                          : f.bbox[2] * f.bbox[3];
  }
  ds.ann_ids_.push_back(el.id);
  ds.ann_iscrowd_.push_back(static_cast<uint8_t>(f.iscrowd));
  ds.ann_bbox_.push_back(f.bbox);
  ds.ann_area_.push_back(f.area);
  ds.ann_poly_begin_.push_back(f.poly_begin);
  ds.ann_poly_count_.push_back(f.poly_count);
  ds.ann_rle_.push_back(f.rle);
  ds.ann_kpt_begin_.push_back(f.kpt_begin);
  ds.ann_kpt_count_.push_back(f.kpt_count);
  ds.ann_num_keypoints_.push_back(static_cast<int32_t>(f.num_keypoints));
  b.ann_image_ids_.push_back(f.image_id);
  b.ann_category_ids_.push_back(f.category_id);
  b.ann_element_.push_back(el.index);
}

}  // namespace detkit::data
