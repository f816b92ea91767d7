#include "detkit/data/shapes/shapes_coco.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "detkit/data/shapes/shapes_geometry.h"
#include "detkit/structures/mask_ops.h"

namespace detkit::data {

namespace {

// A triangle's corners as keypoints (kTriangleKeypoints order). COCO keypoints are pixel indices
// (Detectron2 adds 0.5 when loading), so a corner at continuous (x, y) is written as x - 0.5,
// y - 0.5, rounded to 0.01. v: 2 when the shape shows within 2 pixels of the corner, else 1.
std::vector<double> triangle_keypoints(const SceneObject& object) {
  std::vector<cv::Point2d> c = object.outline;
  std::sort(c.begin(), c.end(), [](const cv::Point2d& a, const cv::Point2d& b) {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
  });
  if (c[1].x > c[2].x) std::swap(c[1], c[2]);
  std::vector<double> keypoints;
  const cv::Mat& visible = object.visible;
  for (const cv::Point2d& p : c) {
    bool shows = false;
    const int px = static_cast<int>(std::floor(p.x)), py = static_cast<int>(std::floor(p.y));
    for (int y = std::max(0, py - 2); y <= std::min(visible.rows - 1, py + 2) && !shows; ++y)
      for (int x = std::max(0, px - 2); x <= std::min(visible.cols - 1, px + 2) && !shows; ++x)
        shows = visible.at<uint8_t>(y, x) != 0;
    keypoints.push_back(std::round((p.x - 0.5) * 100) / 100);
    keypoints.push_back(std::round((p.y - 0.5) * 100) / 100);
    keypoints.push_back(shows ? 2 : 1);
  }
  return keypoints;
}

}  // namespace

std::vector<ShapesAnnotation> annotate_scene(const ShapesScene& scene) {
  std::vector<ShapesAnnotation> annotations;
  annotations.reserve(scene.objects.size());
  for (const SceneObject& object : scene.objects) {
    ShapesAnnotation annotation;
    annotation.category_id = object.category_id;
    annotation.segmentation = trace_mask_outline(object.visible).polygons;
    const mask_ops::RLE rle =
        mask_ops::from_polygons(annotation.segmentation, scene.image.rows, scene.image.cols);
    annotation.area = static_cast<double>(mask_ops::area(rle));
    annotation.bbox = polygons_bbox(annotation.segmentation);
    if (object.category_id == kTriangle && object.outline.size() == 3)
      annotation.keypoints = triangle_keypoints(object);
    annotations.push_back(std::move(annotation));
  }
  return annotations;
}

namespace {

using Json = nlohmann::ordered_json;

// info, images (ids from 1 in order) and annotations (ids from 1 in image order, iscrowd 0); with
// `keypoints_only`, just the annotations with keypoints, keeping their ids, with their keypoints.
Json shapes_json(const std::vector<ShapesImage>& images, const char* description,
                 bool keypoints_only) {
  Json coco;
  coco["info"] = {{"description", description}, {"version", "1.0"}};
  coco["images"] = Json::array();
  coco["annotations"] = Json::array();
  int annotation_id = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const ShapesImage& image = images[i];
    const int image_id = static_cast<int>(i) + 1;
    coco["images"].push_back({{"id", image_id},
                              {"file_name", image.file_name},
                              {"width", image.width},
                              {"height", image.height}});
    for (const ShapesAnnotation& annotation : image.annotations) {
      ++annotation_id;
      if (keypoints_only && annotation.keypoints.empty()) continue;
      Json a = {{"id", annotation_id},
                {"image_id", image_id},
                {"category_id", annotation.category_id},
                {"segmentation", annotation.segmentation},
                {"area", annotation.area},
                {"bbox", annotation.bbox},
                {"iscrowd", 0}};
      if (keypoints_only) {
        a["keypoints"] = annotation.keypoints;
        a["num_keypoints"] = annotation.keypoints.size() / 3;
      }
      coco["annotations"].push_back(std::move(a));
    }
  }
  return coco;
}

}  // namespace

std::string shapes_coco_json(const std::vector<ShapesImage>& images) {
  Json coco = shapes_json(images, "detkit synthetic shapes: circles, triangles, rectangles", false);
  coco["categories"] = Json::array();
  for (int id : {kCircle, kTriangle, kRectangle}) {
    coco["categories"].push_back(
        {{"id", id}, {"name", shape_category_name(id)}, {"supercategory", "shape"}});
  }
  return coco.dump();
}

std::string shapes_triangle_keypoints_json(const std::vector<ShapesImage>& images) {
  Json coco = shapes_json(images, "detkit synthetic shapes: the corners of the triangles", true);
  coco["categories"] = Json::array(
      {{{"id", kTriangle},
        {"name", shape_category_name(kTriangle)},
        {"supercategory", "shape"},
        {"keypoints", {kTriangleKeypoints[0], kTriangleKeypoints[1], kTriangleKeypoints[2]}},
        {"skeleton", {{1, 2}, {2, 3}, {3, 1}}}}});
  return coco.dump();
}

}  // namespace detkit::data
