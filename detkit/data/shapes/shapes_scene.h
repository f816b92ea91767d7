#pragma once
// One synthetic image: a cluttered background with circles, triangles and rectangles drawn over
// it in order, later shapes occluding earlier ones, and what remains visible of each shape.
#include <cstdint>
#include <opencv2/core.hpp>
#include <vector>

namespace detkit::data {

struct SceneOptions {
  int width = 320;
  int height = 320;
  int min_objects = 1;  // objects that find no acceptable place within a few tries are skipped
  int max_objects = 6;
  double min_size_fraction = 0.05;  // longest extent of a shape, relative to the shorter side
  double max_size_fraction = 0.40;
  double min_visible_fraction = 0.3;  // an occluded shape keeps at least this part of its pixels
  bool stuff = false;  // a background of stuff regions (render_stuff_background), not clutter
};

struct SceneObject {
  int category_id = 0;  // ShapeCategory
  cv::Mat visible;      // CV_8U, image-sized: 1 where the shape is the topmost (half-covered
                        // pixels count), no holes, and no fragment smaller than kMinFragmentArea
  int full_area = 0;    // pixels of the shape before occlusion
  std::vector<cv::Point2d> outline;  // the shape's polygon (a triangle's three corners)
};

struct ShapesScene {
  cv::Mat image;                     // CV_8UC3, BGR
  std::vector<SceneObject> objects;  // drawing order
  cv::Mat stuff;  // with SceneOptions::stuff: CV_8U, the StuffCategory of each background pixel
                  // (under the shapes too); empty otherwise
};

/// Pixels every visible fragment of a shape keeps at least.
constexpr int kMinFragmentArea = 16;

/// Renders the scene of `seed`; the result depends only on the seed and the options. A new shape
/// is placed again (up to a few times, then dropped) when it would leave an earlier shape less
/// than min_visible_fraction visible, with a hole, or with a fragment below kMinFragmentArea, so
/// every shape in the image can be annotated by polygons of its visible part. Each shape's colour
/// is the one, of several random candidates, that stands out most from what surrounds it.
ShapesScene render_scene(uint64_t seed, const SceneOptions& options);

}  // namespace detkit::data
