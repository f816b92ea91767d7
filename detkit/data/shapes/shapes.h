#pragma once
// The synthetic "shapes" instance-segmentation dataset: detkit's built-in dataset for demos and
// tests. Circles, triangles and rectangles of varied size, colour and rotation on cluttered
// backgrounds, occluding each other; a small Mask R-CNN learns it on a CPU in minutes.
//
// Layout (COCO, as Detectron2's register_coco_instances expects):
//   <out_dir>/annotations/instances_train.json   <out_dir>/train/000001.jpg ...
//   <out_dir>/annotations/instances_val.json     <out_dir>/val/000001.jpg ...
//   <out_dir>/annotations/triangle_keypoints_{train,val}.json: the triangles' corners as
//   keypoints (top, left, right) of a one-category keypoint dataset, over the same images.
// Categories: 1 "circle", 2 "triangle", 3 "rectangle". Each annotation's polygons describe the
// visible part of its shape and rasterise (pycocotools) to exactly the pixels where it is on top.
//
// With ShapesOptions::panoptic the backgrounds are stuff regions instead of clutter (categories 4
// "stripes", 5 "checks", 6 "grain": textures; detkit/data/shapes/shapes_stuff.h), and the same
// folder also gets Detectron2's COCO panoptic layout:
//   <out_dir>/annotations/panoptic_{train,val}.json   <out_dir>/panoptic_{train,val}/000001.png
//   <out_dir>/panoptic_stuff_{train,val}/000001.png: the "separated" semantic labels (shapes 0,
//   stuff 1..3), as prepare_panoptic_fpn would make them from the panoptic PNGs.
#include <cstdint>
#include <string>

namespace detkit::data {

/// Limits of ShapesOptions::width and height.
constexpr int kShapesMinSide = 32;
constexpr int kShapesMaxSide = 4096;

struct ShapesOptions {
  std::string out_dir;
  int num_train = 200;
  int num_val = 50;
  int width = 320;  // pixels, kShapesMinSide..kShapesMaxSide
  int height = 320;
  uint64_t seed = 0;
  int min_objects = 1;  // shapes per image, 1 <= min_objects <= max_objects <= 50
  int max_objects = 6;
  int num_workers = 0;  // threads rendering images; 0: one per core. Output does not depend on it.
  bool panoptic = false;  // stuff backgrounds and the panoptic files (see above)
};

/// Writes the dataset; existing files of the same names are replaced (each atomically). The
/// output depends only on the options other than num_workers: the same seed gives byte-identical
/// files with the same build. Throws detkit::Error naming the option when one is out of range or
/// when out_dir cannot be created.
void make_shapes(const ShapesOptions& options);

}  // namespace detkit::data
