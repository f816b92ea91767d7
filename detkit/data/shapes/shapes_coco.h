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
  // Triangles: their corners as COCO keypoints "top", "left", "right" (x, y, v; x and y pixel
  // indices, v 2 where the corner shows, 1 where a later shape hides it); empty for the others.
  std::vector<double> keypoints;
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

/// The triangle keypoints of a split as a COCO person-keypoints-style file: the same images and
/// annotation ids, the triangles only, with "keypoints" and "num_keypoints", and the one
/// category "triangle" naming its keypoints (kTriangleKeypoints) and skeleton.
std::string shapes_triangle_keypoints_json(const std::vector<ShapesImage>& images);

/// The keypoints of a triangle, in this order: the corner with the smallest y ("top"), then the
/// other two by x ("left", "right"). A horizontal flip swaps left and right.
inline const char* const kTriangleKeypoints[3] = {"top", "left", "right"};

}  // namespace detkit::data
