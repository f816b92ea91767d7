#include "detkit/data/shapes/shapes_panoptic.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "detkit/data/shapes/shapes_geometry.h"
#include "detkit/data/shapes/shapes_stuff.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

struct Extent {
  int64_t area = 0;
  int x0 = 1 << 30, y0 = 1 << 30, x1 = -1, y1 = -1;
  void add(int x, int y) {
    ++area;
    x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x), y1 = std::max(y1, y);
  }
};

// Shapes' colours in the categories' "color" field (RGB), stuff's after them.
const std::map<int, std::array<int, 3>> kCategoryColors = {
    {kCircle, {220, 20, 60}},  {kTriangle, {0, 130, 200}}, {kRectangle, {255, 180, 0}},
    {kStripes, {120, 90, 60}}, {kChecks, {60, 140, 90}},   {kGrain, {150, 150, 170}},
};

}  // namespace

ShapesPanoptic panoptic_scene(const ShapesScene& scene) {
  if (scene.stuff.empty() || scene.stuff.type() != CV_8U ||
      scene.stuff.size() != scene.image.size()) {
    throw Error("panoptic_scene: the scene has no stuff map of the image's size");
  }
  const int rows = scene.image.rows, cols = scene.image.cols;
  // Segment index per pixel: the shape on top (visible masks do not overlap), else its stuff.
  cv::Mat owner(rows, cols, CV_32S, cv::Scalar(-1));
  for (size_t k = 0; k < scene.objects.size(); ++k) {
    owner.setTo(static_cast<int>(k), scene.objects[k].visible);
  }
  std::vector<Extent> things(scene.objects.size());
  std::map<int, Extent> stuff;  // by category id: id order
  ShapesPanoptic out{cv::Mat(rows, cols, CV_8UC3), cv::Mat(rows, cols, CV_8U), {}};
  for (int y = 0; y < rows; ++y) {
    const int* o = owner.ptr<int>(y);
    const uint8_t* category = scene.stuff.ptr<uint8_t>(y);
    cv::Vec3b* ids = out.ids_bgr.ptr<cv::Vec3b>(y);
    uint8_t* semantic = out.semantic.ptr<uint8_t>(y);
    for (int x = 0; x < cols; ++x) {
      int64_t id = 0;
      if (o[x] >= 0) {
        things[o[x]].add(x, y);
        id = o[x] + 1;
        semantic[x] = 0;
      } else {
        const int c = category[x];
        if (c < kStripes || c > kGrain) {
          throw Error("panoptic_scene: stuff map holds " + std::to_string(c) +
                      ", not a stuff category");
        }
        stuff[c].add(x, y);
        id = kStuffSegmentIdStep * c;
        semantic[x] = static_cast<uint8_t>(c - kStripes + 1);
      }
      ids[x] = cv::Vec3b(static_cast<uint8_t>(id >> 16), static_cast<uint8_t>((id >> 8) & 255),
                         static_cast<uint8_t>(id & 255));
    }
  }
  auto segment = [](int64_t id, int category_id, bool isthing, const Extent& e) {
    return ShapesSegment{
        id, category_id, isthing, e.area, {e.x0, e.y0, e.x1 - e.x0 + 1, e.y1 - e.y0 + 1}};
  };
  for (size_t k = 0; k < things.size(); ++k) {
    if (things[k].area == 0) continue;  // render_scene keeps every shape visible
    out.segments.push_back(
        segment(static_cast<int64_t>(k) + 1, scene.objects[k].category_id, true, things[k]));
  }
  for (const auto& [c, e] : stuff)
    out.segments.push_back(segment(kStuffSegmentIdStep * c, c, false, e));
  return out;
}

std::string shapes_panoptic_json(const std::vector<ShapesPanopticImage>& images) {
  using Json = nlohmann::ordered_json;
  Json coco;
  coco["info"] = {{"description", "detkit synthetic shapes on stuff textures: panoptic"},
                  {"version", "1.0"}};
  coco["images"] = Json::array();
  coco["annotations"] = Json::array();
  for (size_t i = 0; i < images.size(); ++i) {
    const ShapesPanopticImage& image = images[i];
    const int image_id = static_cast<int>(i) + 1;
    coco["images"].push_back({{"id", image_id},
                              {"file_name", image.file_name},
                              {"width", image.width},
                              {"height", image.height}});
    Json segments = Json::array();
    for (const ShapesSegment& s : image.segments) {
      segments.push_back({{"id", s.id},
                          {"category_id", s.category_id},
                          {"iscrowd", 0},
                          {"bbox", s.bbox},
                          {"area", s.area}});
    }
    coco["annotations"].push_back({{"image_id", image_id},
                                   {"file_name", image.png_file_name},
                                   {"segments_info", std::move(segments)}});
  }
  coco["categories"] = Json::array();
  for (const auto& [id, color] : kCategoryColors) {
    const bool isthing = id <= kRectangle;
    coco["categories"].push_back(
        {{"id", id},
         {"name", isthing ? shape_category_name(id) : stuff_category_name(id)},
         {"supercategory", isthing ? "shape" : "texture"},
         {"isthing", isthing ? 1 : 0},
         {"color", color}});
  }
  return coco.dump();
}

}  // namespace detkit::data
