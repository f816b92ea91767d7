#include "detkit/evaluation/coco_results.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>

#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::evaluation {

namespace {

namespace dom = simdjson::dom;

struct EntryReader {
  const std::string& file;
  size_t index;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(file + ": results[" + std::to_string(index) + "]: " + what);
  }

  dom::element field(dom::object entry, const char* key) const {
    dom::element value;
    if (entry[key].get(value)) fail(std::string("missing \"") + key + "\"");
    return value;
  }

  double number(dom::element value, const char* key) const {
    if (value.is_int64()) return static_cast<double>(int64_t(value));
    if (value.is_uint64()) return static_cast<double>(uint64_t(value));
    if (value.is_double()) return double(value);
    fail(std::string("\"") + key + "\" must be a number");
  }

  int64_t integer(dom::element value, const char* key) const {
    double v = number(value, key);
    if (v != std::floor(v)) fail(std::string("\"") + key + "\" must be an integer");
    return static_cast<int64_t>(v);
  }

  std::array<double, 4> bbox(dom::element value) const {
    dom::array arr;
    if (value.get(arr) || arr.size() != 4) fail("\"bbox\" must be [x, y, width, height]");
    std::array<double, 4> box{};
    size_t i = 0;
    for (dom::element v : arr) box[i++] = number(v, "bbox");
    for (double v : box)
      if (!std::isfinite(v)) fail("\"bbox\" holds a non-finite number");
    if (box[2] < 0 || box[3] < 0)
      fail("\"bbox\" has a negative size (width " + std::to_string(box[2]) + ", height " +
           std::to_string(box[3]) + ")");
    return box;
  }

  // x, y, score per keypoint: exactly `values` numbers, all finite.
  std::vector<double> keypoints(dom::element value, size_t values) const {
    dom::array arr;
    if (value.get(arr)) fail("\"keypoints\" must be a list [x, y, score, ...]");
    std::vector<double> out;
    for (dom::element v : arr) out.push_back(number(v, "keypoints"));
    if (out.size() != values)
      fail("\"keypoints\" holds " + std::to_string(out.size()) + " numbers; " +
           std::to_string(values / 3) + " keypoints (the OKS sigmas) need " +
           std::to_string(values));
    for (double v : out)
      if (!std::isfinite(v)) fail("\"keypoints\" holds a non-finite number");
    return out;
  }

  mask_ops::RLE rle(dom::element value) const {
    dom::object obj;
    if (value.get(obj)) fail("\"segmentation\" must be an RLE {\"size\": [h, w], \"counts\": ...}");
    dom::array size;
    if (obj["size"].get(size) || size.size() != 2) fail("\"segmentation.size\" must be [h, w]");
    int64_t hw[2];
    size_t i = 0;
    for (dom::element v : size) hw[i++] = integer(v, "segmentation.size");
    dom::element counts;
    if (obj["counts"].get(counts)) fail("\"segmentation.counts\" is missing");
    try {
      if (counts.is_string())
        return mask_ops::from_string(std::string(std::string_view(counts)), hw[0], hw[1]);
      dom::array runs;
      if (counts.get(runs)) fail("\"segmentation.counts\" must be a string or a list of runs");
      std::vector<int64_t> values;
      for (dom::element v : runs) values.push_back(integer(v, "segmentation.counts"));
      return mask_ops::from_uncompressed(values, hw[0], hw[1]);
    } catch (const Error& e) {
      fail(std::string("malformed RLE: ") + e.what());
    }
  }
};

}  // namespace

std::vector<EvalObject> parse_coco_results(const std::string& json_text, const std::string& file,
                                           IouType iou_type, const GroundTruthIds& gt,
                                           size_t num_keypoints) {
  dom::parser parser;
  dom::element doc;
  if (auto error = parser.parse(json_text).get(doc))
    throw Error(file + ": not valid JSON: " + simdjson::error_message(error));
  dom::array entries;
  if (doc.get(entries)) throw Error(file + ": results must be a JSON list of detections");
  std::vector<EvalObject> out;
  out.reserve(entries.size());
  size_t index = 0;
  for (dom::element element : entries) {
    EntryReader r{file, index};
    dom::object entry;
    if (element.get(entry)) r.fail("each detection must be a JSON object");
    EvalObject d;
    d.id = static_cast<int64_t>(index) + 1;
    d.image_id = r.integer(r.field(entry, "image_id"), "image_id");
    d.category_id = r.integer(r.field(entry, "category_id"), "category_id");
    d.score = r.number(r.field(entry, "score"), "score");
    if (!std::isfinite(d.score)) r.fail("\"score\" must be finite");
    if (!gt.image_ids.count(d.image_id))
      r.fail("image_id " + std::to_string(d.image_id) + " is not in the ground truth");
    if (!gt.category_ids.count(d.category_id))
      r.fail("category_id " + std::to_string(d.category_id) + " is not in the ground truth");
    if (iou_type == IouType::Bbox) {
      d.bbox = r.bbox(r.field(entry, "bbox"));
      d.area = d.bbox[2] * d.bbox[3];
    } else if (iou_type == IouType::Keypoints) {
      d.keypoints = r.keypoints(r.field(entry, "keypoints"), 3 * num_keypoints);
      // loadRes: results with a box take their area from it (Detectron2's do), others from the
      // keypoints' extent.
      dom::element box;
      dom::array box_values;
      if (!entry["bbox"].get(box) &&
          !(box.get(box_values) == simdjson::SUCCESS && box_values.size() == 0)) {
        d.bbox = r.bbox(box);
        d.area = d.bbox[2] * d.bbox[3];
      } else {
        double x0 = d.keypoints[0], x1 = x0, y0 = d.keypoints[1], y1 = y0;
        for (size_t k = 0; k < d.keypoints.size(); k += 3) {
          x0 = std::min(x0, d.keypoints[k]);
          x1 = std::max(x1, d.keypoints[k]);
          y0 = std::min(y0, d.keypoints[k + 1]);
          y1 = std::max(y1, d.keypoints[k + 1]);
        }
        d.bbox = {x0, y0, x1 - x0, y1 - y0};
        d.area = (x1 - x0) * (y1 - y0);
      }
    } else {
      d.rle = r.rle(r.field(entry, "segmentation"));
      d.area = static_cast<double>(mask_ops::area(d.rle));
      dom::element box;
      d.bbox = entry["bbox"].get(box) ? mask_ops::to_bbox(d.rle) : r.bbox(box);
    }
    out.push_back(std::move(d));
    ++index;
  }
  return out;
}

std::vector<EvalObject> load_coco_results(const std::string& path, IouType iou_type,
                                          const GroundTruthIds& gt, size_t num_keypoints) {
  return parse_coco_results(read_file(path), path, iou_type, gt, num_keypoints);
}

}  // namespace detkit::evaluation
