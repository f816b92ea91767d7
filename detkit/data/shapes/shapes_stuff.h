#pragma once
// "Stuff" backgrounds for the panoptic variant of the shapes dataset: the image split into a few
// regions, each filled with the texture of one stuff category, so a model can tell the
// categories apart from pixels (by their texture, not their colours, which are random).
#include <opencv2/core.hpp>

#include "detkit/data/shapes/shapes_random.h"

namespace detkit::data {

/// The stuff categories, with ids after the shape categories (1..3), in id order.
enum StuffCategory : int { kStripes = 4, kChecks = 5, kGrain = 6 };
constexpr int kStuffCategories[] = {kStripes, kChecks, kGrain};

/// COCO category name of a StuffCategory: "stripes", "checks" or "grain".
const char* stuff_category_name(int category_id);

struct StuffBackground {
  cv::Mat canvas;  // CV_32FC3, BGR 0..255
  cv::Mat labels;  // CV_8U, the StuffCategory of each pixel
};

/// A height x width background of 2 to 4 regions (cells around random centres, with wavy
/// borders), each region one random stuff category (neighbours may share one) textured in two
/// random colours of clearly different brightness: parallel stripes, a checkerboard, or a
/// fine-grained speckle, each at a random angle and scale.
StuffBackground render_stuff_background(ShapesRandom& random, int width, int height);

}  // namespace detkit::data
