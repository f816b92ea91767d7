#pragma once
// COCO instance annotations of rendered shapes scenes, and the instances JSON of a split.
#include <array>
#include <string>
#include <vector>

#include "detkit/data/shapes/shapes_polygons.h"
#include "detkit/data/shapes/shapes_scene.h"

namespace detkit::data {

struct ShapesAnnotation {
  int category_id = 0;
  Polygons segmentation;         // visible part of the shape
  double area = 0;               // pycocotools area of the segmentation's RLE
  std::array<double, 4> bbox{};  // [x, y, width, height] of the segmentation's vertices
};

struct ShapesImage {
  std::string file_name;  // relative to the split's image folder
  int width = 0;
  int height = 0;
  std::vector<ShapesAnnotation> annotations;
};

/// One annotation per scene object, from its visible mask.
std::vector<ShapesAnnotation> annotate_scene(const ShapesScene& scene);

/// The COCO instances JSON of a split: info, images (ids from 1 in order), annotations (ids from
/// 1 in image order, iscrowd 0) and the three shape categories.
std::string shapes_coco_json(const std::vector<ShapesImage>& images);

}  // namespace detkit::data
