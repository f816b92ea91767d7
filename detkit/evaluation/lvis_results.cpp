#include "detkit/evaluation/lvis_results.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::evaluation {

namespace {

namespace dom = simdjson::dom;

struct Entry {
  const std::string& file;
  size_t index;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("{}: results[{}]: {}", file, index, what));
  }
  dom::element field(dom::object o, const char* key) const {
    dom::element v;
    if (o[key].get(v)) fail(fmt::format("missing \"{}\"", key));
    return v;
  }
  double number(dom::element v, const char* key) const {
    double d;
    if (v.is_int64()) {
      d = static_cast<double>(int64_t(v));
    } else if (v.is_uint64()) {
      d = static_cast<double>(uint64_t(v));
    } else if (v.is_double()) {
      d = double(v);
    } else {
      fail(fmt::format("\"{}\" must be a number, got {}", key, simdjson::to_string(v)));
    }
    if (!std::isfinite(d)) fail(fmt::format("\"{}\" must be finite", key));
    return d;
  }
  int64_t integer(dom::element v, const char* key) const {
    const double d = number(v, key);
    if (d != std::floor(d)) fail(fmt::format("\"{}\" must be an integer, got {}", key, d));
    return static_cast<int64_t>(d);
  }
  std::array<double, 4> bbox(dom::element v) const {
    dom::array a;
    if (v.get(a) || a.size() != 4) fail("\"bbox\" must be [x, y, width, height]");
    std::array<double, 4> box{};
    size_t i = 0;
    for (dom::element e : a) box[i++] = number(e, "bbox");
    return box;
  }
  mask_ops::RLE rle(dom::element v, const LvisImage& image) const {
    dom::object o;
    if (v.get(o)) fail("\"segmentation\" must be an RLE {\"size\": [h, w], \"counts\": ...}");
    dom::array size;
    if (o["size"].get(size) || size.size() != 2) fail("\"segmentation.size\" must be [h, w]");
    int64_t hw[2];
    size_t i = 0;
    for (dom::element e : size) hw[i++] = integer(e, "segmentation.size");
    if (hw[0] != image.height || hw[1] != image.width)
      fail(fmt::format("\"segmentation.size\" [{}, {}] differs from image {}'s [{}, {}]", hw[0],
                       hw[1], image.id, image.height, image.width));
    dom::element counts = field(o, "counts");
    try {
      std::string_view s;
      if (!counts.get(s)) return mask_ops::from_string(std::string(s), hw[0], hw[1]);
      dom::array runs;
      if (counts.get(runs)) fail("\"segmentation.counts\" must be a string or a list of runs");
      std::vector<int64_t> values;
      for (dom::element e : runs) values.push_back(integer(e, "segmentation.counts"));
      return mask_ops::from_uncompressed(values, hw[0], hw[1]);
    } catch (const Error& e) {
      fail(std::string("malformed RLE: ") + e.what());
    }
  }
};

}  // namespace

std::vector<LvisResult> parse_lvis_results(const std::string& json_text, const std::string& file,
                                           const LvisGroundTruth& gt) {
  dom::parser parser;
  dom::element doc;
  if (auto error = parser.parse(json_text).get(doc))
    throw Error(file + ": not valid JSON: " + simdjson::error_message(error));
  dom::array entries;
  if (doc.get(entries)) throw Error(file + ": results must be a JSON list of detections");
  std::vector<LvisResult> out;
  out.reserve(entries.size());
  for (dom::element element : entries) {
    Entry r{file, out.size()};
    dom::object o;
    if (element.get(o)) r.fail("each detection must be a JSON object");
    LvisResult d;
    d.index = out.size();
    EvalObject& x = d.object;
    x.image_id = r.integer(r.field(o, "image_id"), "image_id");
    x.category_id = r.integer(r.field(o, "category_id"), "category_id");
    x.score = r.number(r.field(o, "score"), "score");
    const LvisImage* image = gt.find_image(x.image_id);
    if (!image) r.fail(fmt::format("image_id {} is not in the ground truth's images", x.image_id));
    if (!gt.has_category(x.category_id))
      r.fail(fmt::format("category_id {} is not in the ground truth's categories", x.category_id));
    dom::element v;
    if ((d.has_bbox = !o["bbox"].get(v))) x.bbox = r.bbox(v);
    if ((d.has_segmentation = !o["segmentation"].get(v))) x.rle = r.rle(v, *image);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<LvisResult> load_lvis_results(const std::string& path, const LvisGroundTruth& gt) {
  return parse_lvis_results(read_file(path), path, gt);
}

std::vector<EvalObject> lvis_results(std::vector<LvisResult> results, const LvisGroundTruth& gt,
                                     IouType iou_type, int64_t max_dets, const std::string& file) {
  // limit_dets_per_image: grouped by image in the order images first appear; a group over the
  // cap sorted by score (stable, highest first) and cut.
  std::vector<int64_t> image_order;
  std::unordered_map<int64_t, std::vector<size_t>> by_image;
  for (size_t i = 0; i < results.size(); ++i) {
    auto [it, fresh] = by_image.try_emplace(results[i].object.image_id);
    if (fresh) image_order.push_back(results[i].object.image_id);
    it->second.push_back(i);
  }
  std::vector<EvalObject> out;
  out.reserve(results.size());
  const bool bbox_branch = !results.empty() && results.front().has_bbox;
  for (int64_t image_id : image_order) {
    std::vector<size_t>& kept = by_image[image_id];
    if (max_dets >= 0 && kept.size() > static_cast<size_t>(max_dets)) {
      std::stable_sort(kept.begin(), kept.end(), [&](size_t a, size_t b) {
        return results[a].object.score > results[b].object.score;
      });
      kept.resize(max_dets);
    }
    for (size_t i : kept) {
      LvisResult& r = results[i];
      EvalObject o = std::move(r.object);
      const auto fail = [&](const char* what) {
        throw Error(fmt::format("{}: results[{}]: {}", file, r.index, what));
      };
      if (bbox_branch) {
        if (!r.has_bbox)
          fail(
              "has no \"bbox\", while the first detection has one (lvis-api's LVISResults "
              "takes every area from the box then)");
        o.area = o.bbox[2] * o.bbox[3];
        if (iou_type == IouType::Segm && !r.has_segmentation) {
          const LvisImage* image = gt.find_image(o.image_id);
          o.rle = mask_ops::from_bbox(o.bbox, image->height, image->width);
        }
      } else {
        if (!r.has_segmentation)
          fail(
              "has neither \"bbox\" nor \"segmentation\" (the first detection has no \"bbox\", "
              "so every one needs a mask)");
        o.area = static_cast<double>(mask_ops::area(o.rle));
        if (!r.has_bbox) o.bbox = mask_ops::to_bbox(o.rle);
      }
      o.id = static_cast<int64_t>(out.size()) + 1;
      out.push_back(std::move(o));
    }
  }
  return out;
}

}  // namespace detkit::evaluation
