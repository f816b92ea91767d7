#include "detkit/data/shapes/shapes_geometry.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

namespace detkit::data {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int kSamplesPerSide = 4;
static_assert(kFullCoverage == kSamplesPerSide * kSamplesPerSide);
constexpr int kFixedPointBits = 4;  // sub-sample precision of cv::fillPoly

// Unit-size outline centred on the origin, before scaling, rotation and placement.
std::vector<cv::Point2d> unit_outline(ShapesRandom& random, int category_id, double size) {
  std::vector<cv::Point2d> points;
  if (category_id == kCircle) {
    const double radius = size / 2;
    const int n = std::max(24, static_cast<int>(std::ceil(2 * kPi * radius / 1.5)));
    for (int i = 0; i < n; ++i) {
      const double a = 2 * kPi * i / n;
      points.emplace_back(radius * std::cos(a), radius * std::sin(a));
    }
  } else if (category_id == kTriangle) {
    const double radius = size / std::sqrt(3.0);  // an equilateral triangle's side is `size`
    for (int i = 0; i < 3; ++i) {
      const double a = 2 * kPi * i / 3 + random.uniform(-1, 1) * kPi / 9;
      const double r = radius * random.uniform(0.85, 1.0);
      points.emplace_back(r * std::cos(a), r * std::sin(a));
    }
  } else {
    const double half_w = size / 2, half_h = half_w / random.uniform(1.0, 3.0);
    points = {{-half_w, -half_h}, {half_w, -half_h}, {half_w, half_h}, {-half_w, half_h}};
  }
  return points;
}

}  // namespace

const char* shape_category_name(int category_id) {
  switch (category_id) {
    case kCircle:
      return "circle";
    case kTriangle:
      return "triangle";
    case kRectangle:
      return "rectangle";
    default:
      return "unknown";
  }
}

ShapeOutline sample_shape(ShapesRandom& random, int width, int height, double min_size,
                          double max_size) {
  ShapeOutline outline;
  outline.category_id = random.uniform_int(kCircle, kRectangle);
  const double size = random.log_uniform(min_size, max_size);
  const double angle = random.uniform(0, 2 * kPi);
  const double c = std::cos(angle), s = std::sin(angle);
  outline.points = unit_outline(random, outline.category_id, size);
  double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  for (cv::Point2d& p : outline.points) {
    p = {c * p.x - s * p.y, s * p.x + c * p.y};
    x0 = std::min(x0, p.x);
    x1 = std::max(x1, p.x);
    y0 = std::min(y0, p.y);
    y1 = std::max(y1, p.y);
  }
  // Centre so the whole shape fits (a shape wider than the image is centred on it).
  const double cx = x1 - x0 < width ? random.uniform(-x0, width - x1) : (width - x0 - x1) / 2;
  const double cy = y1 - y0 < height ? random.uniform(-y0, height - y1) : (height - y0 - y1) / 2;
  for (cv::Point2d& p : outline.points) p += cv::Point2d(cx, cy);
  return outline;
}

ShapeRaster rasterise_shape(const ShapeOutline& outline, int width, int height) {
  ShapeRaster raster;
  raster.mask = cv::Mat::zeros(height, width, CV_8U);
  double x0 = width, x1 = 0, y0 = height, y1 = 0;
  for (const cv::Point2d& p : outline.points) {
    x0 = std::min(x0, p.x);
    x1 = std::max(x1, p.x);
    y0 = std::min(y0, p.y);
    y1 = std::max(y1, p.y);
  }
  const int left = std::max(0, static_cast<int>(std::floor(x0)));
  const int top = std::max(0, static_cast<int>(std::floor(y0)));
  const int right = std::min(width, static_cast<int>(std::ceil(x1)) + 1);
  const int bottom = std::min(height, static_cast<int>(std::ceil(y1)) + 1);
  if (right <= left || bottom <= top) return raster;
  raster.box = cv::Rect(left, top, right - left, bottom - top);

  // Sample (i, j) of the supersampled box sits at image point ((i + 0.5) / 4, (j + 0.5) / 4)
  // relative to the box; fillPoly puts sample centres on integer (fixed-point) coordinates.
  const int n = kSamplesPerSide;
  cv::Mat samples = cv::Mat::zeros(raster.box.height * n, raster.box.width * n, CV_8U);
  std::vector<cv::Point> fixed;
  fixed.reserve(outline.points.size());
  const double unit = static_cast<double>(1 << kFixedPointBits);
  for (const cv::Point2d& p : outline.points) {
    fixed.emplace_back(static_cast<int>(std::lround(((p.x - left) * n - 0.5) * unit)),
                       static_cast<int>(std::lround(((p.y - top) * n - 0.5) * unit)));
  }
  cv::fillPoly(samples, std::vector<std::vector<cv::Point>>{fixed}, cv::Scalar(1), cv::LINE_8,
               kFixedPointBits);

  raster.coverage = cv::Mat::zeros(raster.box.size(), CV_8U);
  for (int y = 0; y < raster.box.height; ++y) {
    uint8_t* coverage = raster.coverage.ptr<uint8_t>(y);
    uint8_t* mask = raster.mask.ptr<uint8_t>(top + y) + left;
    for (int sy = 0; sy < n; ++sy) {
      const uint8_t* row = samples.ptr<uint8_t>(y * n + sy);
      for (int x = 0; x < raster.box.width; ++x) {
        for (int sx = 0; sx < n; ++sx) coverage[x] += row[x * n + sx];
      }
    }
    for (int x = 0; x < raster.box.width; ++x) mask[x] = coverage[x] * 2 >= kFullCoverage ? 1 : 0;
  }
  return raster;
}

}  // namespace detkit::data
