#pragma once
// The three shape categories: random outlines and their anti-aliased rasterisation.
#include <opencv2/core.hpp>
#include <vector>

#include "detkit/data/shapes/shapes_random.h"

namespace detkit::data {

enum ShapeCategory : int { kCircle = 1, kTriangle = 2, kRectangle = 3 };

/// COCO category name of a ShapeCategory: "circle", "triangle" or "rectangle".
const char* shape_category_name(int category_id);

struct ShapeOutline {
  int category_id = kCircle;
  std::vector<cv::Point2d> points;  // closed polygon; pixel (x, y) spans [x, x + 1) x [y, y + 1)
};

/// A random shape lying wholly inside a width x height image: category; size between min_size
/// and max_size pixels, log-uniform (a circle's diameter, a triangle's side, a rectangle's long
/// side); position; rotation. Triangles are irregular (each corner within 20 degrees of an
/// equilateral one's); rectangles have aspect ratios from 1 to 3.
ShapeOutline sample_shape(ShapesRandom& random, int width, int height, double min_size,
                          double max_size);

/// Coverage of a pixel wholly inside a shape: rasterise_shape samples 4 x 4 points per pixel.
constexpr int kFullCoverage = 16;

struct ShapeRaster {
  cv::Rect box;      // pixels the shape touches
  cv::Mat coverage;  // CV_8U, box-sized: samples inside each pixel, 0..kFullCoverage
  cv::Mat mask;      // CV_8U, image-sized: 1 where at least half of a pixel is inside
};

/// Rasterises an outline at 4 x 4 samples per pixel.
ShapeRaster rasterise_shape(const ShapeOutline& outline, int width, int height);

}  // namespace detkit::data
