#pragma once
// Binary mask -> COCO polygons that pycocotools rasterises back to exactly the same pixels.
#include <array>
#include <opencv2/core.hpp>
#include <vector>

namespace detkit::data {

/// COCO polygons [x0, y0, x1, y1, ...] in image coordinates where pixel (x, y) spans
/// [x, x + 1) x [y, y + 1).
using Polygons = std::vector<std::vector<double>>;

struct MaskOutline {
  Polygons polygons;  // one per 8-connected component of the mask
  int num_holes = 0;  // enclosed background regions, which COCO polygons cannot express
};

/// Traces the outer boundary of every component of a CV_8U mask (nonzero = on) with
/// cv::findContours. Vertices lie on pixel corners (on half-pixel steps where the boundary turns
/// inward), so mask_ops::from_polygons of the result gives back the mask's pixels, holes
/// aside. An empty mask gives no polygons.
MaskOutline trace_mask_outline(const cv::Mat& mask);

/// Tight box [x, y, width, height] of all polygon vertices; zeros when there are none.
std::array<double, 4> polygons_bbox(const Polygons& polygons);

}  // namespace detkit::data
