#pragma once
// Detectron2's COCO panoptic layout for shapes scenes rendered with stuff backgrounds
// (SceneOptions::stuff): each image's segment-id PNG, its "panoptic separated" semantic label
// map (what prepare_panoptic_fpn makes of the PNG), and the panoptic JSON of a split.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "detkit/data/shapes/shapes_scene.h"

namespace detkit::data {

struct ShapesSegment {
  int64_t id = 0;  // its pixels' value in the PNG (R + 256 G + 256^2 B)
  int category_id = 0;
  bool isthing = false;
  int64_t area = 0;           // pixels
  std::array<int, 4> bbox{};  // [x, y, width, height] of its pixels
};

struct ShapesPanoptic {
  cv::Mat ids_bgr;   // CV_8UC3, each pixel's segment id as B = id / 256^2, G, R = id % 256
                     // (encode_png writes it as the RGB PNG COCO panoptic expects)
  cv::Mat semantic;  // CV_8U: shapes 0, stuff categories 1, 2, 3 in id order (no
                     // void: every pixel has a segment)
  std::vector<ShapesSegment> segments;  // the shapes in drawing order, then the stuff present
};

/// Segment ids: shape k (drawing order, from 0) is k + 1, the same order as annotate_scene's
/// annotations; a stuff category c is 256 c.
constexpr int64_t kStuffSegmentIdStep = 256;

/// The panoptic annotation of a scene with stuff: every pixel belongs to the shape on top
/// (its visible mask) or else to the stuff category under it; one segment per shape and per stuff
/// category present. Throws detkit::Error when the scene has no stuff map.
ShapesPanoptic panoptic_scene(const ShapesScene& scene);

struct ShapesPanopticImage {
  std::string file_name;      // the image, relative to the split's image folder
  std::string png_file_name;  // relative to the split's panoptic folder
  int width = 0;
  int height = 0;
  std::vector<ShapesSegment> segments;
};

/// The COCO panoptic JSON of a split: info, images (ids from 1 in order), annotations (image_id,
/// file_name, segments_info with iscrowd 0), and the categories: the three shapes (isthing 1)
/// and the three stuff textures (isthing 0), with colours.
std::string shapes_panoptic_json(const std::vector<ShapesPanopticImage>& images);

}  // namespace detkit::data
