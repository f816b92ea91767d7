#include "detkit/data/shapes/shapes_polygons.h"

#include <algorithm>
#include <limits>
#include <opencv2/imgproc.hpp>

namespace detkit::data {
namespace {

// The mask at twice the resolution, as a grid of its sub-pixel corners: corner (u, v) is on when
// one of the (up to four) half-pixels around it is on. The result has a zero border of one so
// findContours sees every component closed. findContours of this grid follows pixel edges, and
// where it cuts a concave corner diagonally the cut lies a quarter pixel from the corner, clear of
// every pixel centre, so pycocotools' rasterisation recovers the mask exactly.
cv::Mat corner_grid(const cv::Mat& mask) {
  const int rows = mask.rows, cols = mask.cols;
  cv::Mat grid = cv::Mat::zeros(2 * rows + 3, 2 * cols + 3, CV_8U);
  for (int v = 0; v <= 2 * rows; ++v) {
    const int y0 = (v - 1) >> 1, y1 = v >> 1;  // rows of the half-pixels above and below
    uint8_t* out = grid.ptr<uint8_t>(v + 1) + 1;
    for (int u = 0; u <= 2 * cols; ++u) {
      const int x0 = (u - 1) >> 1, x1 = u >> 1;
      bool on = false;
      for (int y : {y0, y1}) {
        if (y < 0 || y >= rows) continue;
        const uint8_t* row = mask.ptr<uint8_t>(y);
        on = on || (x0 >= 0 && x0 < cols && row[x0]) || (x1 >= 0 && x1 < cols && row[x1]);
      }
      out[u] = on ? 1 : 0;
    }
  }
  return grid;
}

}  // namespace

MaskOutline trace_mask_outline(const cv::Mat& mask) {
  CV_Assert(mask.type() == CV_8UC1);
  MaskOutline outline;
  if (cv::countNonZero(mask) == 0) return outline;
  const cv::Rect roi = cv::boundingRect(mask);
  cv::Mat grid = corner_grid(mask(roi));
  std::vector<std::vector<cv::Point>> contours;
  std::vector<cv::Vec4i> hierarchy;
  cv::findContours(grid, contours, hierarchy, cv::RETR_CCOMP, cv::CHAIN_APPROX_SIMPLE);
  for (size_t i = 0; i < contours.size(); ++i) {
    if (hierarchy[i][3] >= 0) {
      ++outline.num_holes;
      continue;
    }
    std::vector<double> polygon;
    polygon.reserve(2 * contours[i].size());
    for (const cv::Point& p : contours[i]) {
      polygon.push_back(roi.x + (p.x - 1) * 0.5);
      polygon.push_back(roi.y + (p.y - 1) * 0.5);
    }
    outline.polygons.push_back(std::move(polygon));
  }
  return outline;
}

std::array<double, 4> polygons_bbox(const Polygons& polygons) {
  double x0 = std::numeric_limits<double>::infinity(), y0 = x0;
  double x1 = -x0, y1 = -x0;
  for (const auto& polygon : polygons) {
    for (size_t i = 0; i + 1 < polygon.size(); i += 2) {
      x0 = std::min(x0, polygon[i]);
      x1 = std::max(x1, polygon[i]);
      y0 = std::min(y0, polygon[i + 1]);
      y1 = std::max(y1, polygon[i + 1]);
    }
  }
  if (x0 > x1) return {0, 0, 0, 0};
  return {x0, y0, x1 - x0, y1 - y0};
}

}  // namespace detkit::data
