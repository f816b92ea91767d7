#include "detkit/evaluation/lvis_ground_truth.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "detkit/data/coco/json_stream.h"
#include "detkit/utils/error.h"

namespace detkit::evaluation {

const LvisImage* LvisGroundTruth::find_image(int64_t image_id) const {
  auto it = std::lower_bound(images.begin(), images.end(), image_id,
                             [](const LvisImage& im, int64_t id) { return im.id < id; });
  return it != images.end() && it->id == image_id ? &*it : nullptr;
}

bool LvisGroundTruth::has_category(int64_t category_id) const {
  return std::binary_search(
      categories.begin(), categories.end(), LvisCategory{category_id, "", 'r'},
      [](const LvisCategory& a, const LvisCategory& b) { return a.id < b.id; });
}

namespace {

namespace dom = simdjson::dom;

const std::vector<std::string> kArrays = {"images", "annotations", "categories"};

// One element of a top-level array, for messages: "<file>: annotations[17]<what> (annotation id
// 12345)"; `what` starts with ".key: " or ": ".
struct Place {
  const std::string& file;
  const char* array;
  uint64_t index;
  std::string id_note;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("{}: {}[{}]{}{}", file, array, index, what, id_note));
  }
  dom::element required(dom::object o, const char* key) const {
    dom::element v;
    if (o[key].get(v)) fail(fmt::format(": missing key \"{}\"", key));
    return v;
  }
  bool optional(dom::object o, const char* key, dom::element& v) const { return !o[key].get(v); }
  int64_t integer(dom::element v, const std::string& path) const {
    if (v.is_int64()) return int64_t(v);
    if (v.is_double()) {
      const double d = double(v);
      if (d == std::floor(d) && std::abs(d) < 9.0e15) return static_cast<int64_t>(d);
    }
    fail(fmt::format("{}: must be an integer, got {}", path, simdjson::to_string(v)));
  }
  double number(dom::element v, const std::string& path) const {
    double d;
    if (v.is_int64()) {
      d = static_cast<double>(int64_t(v));
    } else if (v.is_uint64()) {
      d = static_cast<double>(uint64_t(v));
    } else if (v.is_double()) {
      d = double(v);
    } else {
      fail(fmt::format("{}: must be a number, got {}", path, simdjson::to_string(v)));
    }
    if (!std::isfinite(d)) fail(fmt::format("{}: must be finite", path));
    return d;
  }
  dom::array array_of(dom::element v, const std::string& path) const {
    dom::array a;
    if (v.get(a)) fail(fmt::format("{}: must be a list, got {}", path, simdjson::to_string(v)));
    return a;
  }
  std::vector<int64_t> integers(dom::element v, const std::string& path) const {
    std::vector<int64_t> out;
    for (dom::element e : array_of(v, path))
      out.push_back(integer(e, fmt::format("{}[{}]", path, out.size())));
    return out;
  }
};

// A segmentation kept until the image sizes are known (images may follow the annotations).
struct PendingMask {
  std::vector<std::vector<double>> polygons;
  bool rle = false;
  std::string counts_string;
  std::vector<int64_t> counts;
  int64_t h = 0, w = 0;
};

class Reader {
 public:
  Reader(const std::string& path, IouType iou_type) : iou_type_(iou_type) { gt_.file = path; }

  LvisGroundTruth read() {
    const auto values = data::stream_top_level_arrays(
        gt_.file, kArrays, [&](size_t key, data::ElementBatch& batch) { parse(key, batch); });
    for (const std::string& key : kArrays) {
      size_t count = 0;
      for (const auto& v : values) {
        if (v.key != key) continue;
        ++count;
        if (v.kind != data::JsonKind::kArray)
          fail(fmt::format("top-level \"{}\" must be a list, got {}", key,
                           data::json_kind_name(v.kind)));
      }
      if (count == 0) fail(fmt::format("missing top-level key \"{}\"", key));
      if (count > 1) fail(fmt::format("top-level key \"{}\" appears twice", key));
    }
    resolve();
    return std::move(gt_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error(gt_.file + ": " + what); }

  void parse(size_t key, data::ElementBatch& batch) {
    const std::string_view text = batch.from(0);
    dom::element doc;
    if (auto e = parser_.parse(text.data(), text.size(), false).get(doc))
      fail(fmt::format("{}[{}...]: {}", kArrays[key], batch.first_index(),
                       simdjson::error_message(e)));
    uint64_t index = batch.first_index();
    for (dom::element element : dom::array(doc)) {
      Place at{gt_.file, kArrays[key].c_str(), index++, ""};
      dom::object object;
      if (element.get(object)) at.fail(": must be an object");
      if (key == 0) add_image(object, at);
      if (key == 1) add_annotation(object, at);
      if (key == 2) add_category(object, at);
    }
  }

  void add_image(dom::object o, Place& at) {
    LvisImage im;
    im.id = at.integer(at.required(o, "id"), ".id");
    at.id_note = fmt::format(" (image id {})", im.id);
    auto [it, fresh] = image_index_.emplace(im.id, at.index);
    if (!fresh)
      throw Error(fmt::format("{}: images[{}]: image id {} is listed twice (also images[{}])",
                              gt_.file, at.index, im.id, it->second));
    dom::element v;
    if (at.optional(o, "height", v)) im.height = at.integer(v, ".height");
    if (at.optional(o, "width", v)) im.width = at.integer(v, ".width");
    if (im.height < 0 || im.width < 0)
      at.fail(
          fmt::format(": height and width must not be negative, got {} x {}", im.height, im.width));
    im.neg_category_ids = at.integers(at.required(o, "neg_category_ids"), ".neg_category_ids");
    im.not_exhaustive_category_ids =
        at.integers(at.required(o, "not_exhaustive_category_ids"), ".not_exhaustive_category_ids");
    images_.emplace_back(std::move(im), at.index);
  }

  void add_category(dom::object o, Place& at) {
    LvisCategory c;
    c.id = at.integer(at.required(o, "id"), ".id");
    at.id_note = fmt::format(" (category id {})", c.id);
    auto [it, fresh] = category_index_.emplace(c.id, at.index);
    if (!fresh)
      throw Error(
          fmt::format("{}: categories[{}]: category id {} is listed twice (also "
                      "categories[{}])",
                      gt_.file, at.index, c.id, it->second));
    dom::element v;
    std::string_view s;
    if (at.optional(o, "name", v)) {
      if (v.get(s)) at.fail(".name: must be a string");
      c.name = std::string(s);
    }
    if (at.required(o, "frequency").get(s) || s.size() != 1 ||
        (s[0] != 'r' && s[0] != 'c' && s[0] != 'f'))
      at.fail(".frequency: must be \"r\", \"c\" or \"f\"");
    c.frequency = s[0];
    gt_.categories.push_back(std::move(c));
  }

  void add_annotation(dom::object o, Place& at) {
    EvalObject a;
    a.id = at.integer(at.required(o, "id"), ".id");
    at.id_note = fmt::format(" (annotation id {})", a.id);
    auto [it, fresh] = annotation_index_.emplace(a.id, at.index);
    if (!fresh)
      at.fail(
          fmt::format(": annotation id {} is used twice (also annotations[{}])", a.id, it->second));
    a.image_id = at.integer(at.required(o, "image_id"), ".image_id");
    a.category_id = at.integer(at.required(o, "category_id"), ".category_id");
    a.area = at.number(at.required(o, "area"), ".area");
    dom::element v;
    const bool has_bbox = at.optional(o, "bbox", v);
    if (has_bbox) a.bbox = read_box(v, at);
    if (!has_bbox && iou_type_ == IouType::Bbox) at.fail(": missing key \"bbox\"");
    uint8_t ignore = 0;
    if (at.optional(o, "ignore", v)) {
      bool b;
      ignore = v.get(b) ? at.number(v, ".ignore") != 0 : b;
    }
    if (iou_type_ == IouType::Segm)
      pending_.push_back(read_segmentation(at.required(o, "segmentation"), at));
    gt_.annotations.push_back(std::move(a));
    gt_.annotation_ignore.push_back(ignore);
  }

  std::array<double, 4> read_box(dom::element v, const Place& at) const {
    dom::array arr = at.array_of(v, ".bbox");
    if (arr.size() != 4) at.fail(".bbox: must be [x, y, width, height]");
    std::array<double, 4> box{};
    size_t i = 0;
    for (dom::element e : arr) box[i++] = at.number(e, ".bbox");
    if (box[2] < 0 || box[3] < 0)
      at.fail(fmt::format(".bbox: width and height must be >= 0, got [{}, {}, {}, {}]", box[0],
                          box[1], box[2], box[3]));
    return box;
  }

  PendingMask read_segmentation(dom::element v, const Place& at) const {
    PendingMask m;
    dom::object rle;
    if (!v.get(rle)) {  // {"size": [h, w], "counts": "..." or [runs]}
      m.rle = true;
      std::vector<int64_t> size = at.integers(at.required(rle, "size"), ".segmentation.size");
      if (size.size() != 2) at.fail(".segmentation.size: must be [height, width]");
      m.h = size[0], m.w = size[1];
      dom::element counts = at.required(rle, "counts");
      std::string_view s;
      if (!counts.get(s)) {
        m.counts_string = std::string(s);
      } else {
        m.counts = at.integers(counts, ".segmentation.counts");
      }
      return m;
    }
    for (dom::element polygon : at.array_of(v, ".segmentation")) {
      const std::string path = fmt::format(".segmentation[{}]", m.polygons.size());
      std::vector<double> xy;
      for (dom::element c : at.array_of(polygon, path)) xy.push_back(at.number(c, path));
      m.polygons.push_back(std::move(xy));
    }
    if (m.polygons.empty()) at.fail(".segmentation: an empty list of polygons");
    return m;
  }

  // References between the arrays, checked once the whole file is read; then the masks.
  void resolve() {
    std::sort(gt_.categories.begin(), gt_.categories.end(),
              [](const LvisCategory& a, const LvisCategory& b) { return a.id < b.id; });
    for (const auto& [im, index] : images_) {
      for (const auto* list : {&im.neg_category_ids, &im.not_exhaustive_category_ids}) {
        for (int64_t c : *list) {
          if (gt_.has_category(c)) continue;
          fail(fmt::format(
              "images[{}]: {} holds category id {}, which is not in categories "
              "(image id {})",
              index,
              list == &im.neg_category_ids ? "neg_category_ids" : "not_exhaustive_category_ids", c,
              im.id));
        }
      }
      gt_.images.push_back(im);
    }
    images_.clear();
    std::sort(gt_.images.begin(), gt_.images.end(),
              [](const LvisImage& a, const LvisImage& b) { return a.id < b.id; });
    for (size_t i = 0; i < gt_.annotations.size(); ++i) {
      EvalObject& a = gt_.annotations[i];
      if (!gt_.has_category(a.category_id))
        fail(fmt::format("annotations[{}]: category_id {} is not in categories (annotation id {})",
                         i, a.category_id, a.id));
      const LvisImage* im = gt_.find_image(a.image_id);
      if (!im)
        fail(fmt::format("annotations[{}]: image_id {} is not in images (annotation id {})", i,
                         a.image_id, a.id));
      if (iou_type_ == IouType::Segm) a.rle = to_rle(pending_[i], *im, i, a.id);
    }
    pending_.clear();
  }

  // lvis-api's ann_to_rle: polygons rasterised at the image's size and merged, or the RLE.
  mask_ops::RLE to_rle(const PendingMask& m, const LvisImage& im, size_t index, int64_t id) const {
    const std::string where = fmt::format("annotations[{}].segmentation", index);
    try {
      if (m.rle) {
        if (m.h != im.height || m.w != im.width)
          throw Error(fmt::format("size [{}, {}] differs from its image's [{}, {}]", m.h, m.w,
                                  im.height, im.width));
        return m.counts.empty() ? mask_ops::from_string(m.counts_string, m.h, m.w)
                                : mask_ops::from_uncompressed(m.counts, m.h, m.w);
      }
      if (im.height <= 0 || im.width <= 0)
        throw Error(fmt::format("image id {} has no height and width to rasterise it at", im.id));
      return mask_ops::from_polygons(m.polygons, im.height, im.width);
    } catch (const Error& e) {
      fail(fmt::format("{}: {} (annotation id {})", where, e.what(), id));
    }
  }

  IouType iou_type_;
  LvisGroundTruth gt_;
  dom::parser parser_;
  std::vector<std::pair<LvisImage, uint64_t>> images_;  // with their index in the file
  std::unordered_map<int64_t, uint64_t> image_index_, category_index_, annotation_index_;
  std::vector<PendingMask> pending_;  // by annotation, segm only
};

struct Decided {
  bool lvis;
};

}  // namespace

LvisGroundTruth load_lvis_ground_truth(const std::string& path, IouType iou_type) {
  if (iou_type == IouType::Keypoints)
    throw Error(path + ": LVIS has no keypoints; evaluate bbox or segm");
  return Reader(path, iou_type).read();
}

bool is_lvis_json(const std::string& path) {
  // The first image or category read decides (LVIS needs both fields: lvis-api reads every
  // image's negative lists and every category's frequency), so a file is read only up to it.
  dom::parser parser;
  try {
    data::stream_top_level_arrays(
        path, {"images", "categories"}, [&](size_t key, data::ElementBatch& batch) {
          if (batch.size() == 0) return;
          const std::string_view text = batch.only(0);
          dom::element doc;
          dom::object first;
          dom::element v;
          bool lvis = false;
          if (!parser.parse(text.data(), text.size(), false).get(doc) && !doc.at(0).get(first)) {
            lvis = key == 0 ? !first["neg_category_ids"].get(v) ||
                                  !first["not_exhaustive_category_ids"].get(v)
                            : !first["frequency"].get(v);
          }
          throw Decided{lvis};
        });
  } catch (const Decided& d) {
    return d.lvis;
  }
  return false;
}

}  // namespace detkit::evaluation
