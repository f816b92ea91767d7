#include "detkit/data/shapes/shapes_background.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <vector>

namespace detkit::data {
namespace {

constexpr double kPi = 3.14159265358979323846;

double smoothstep(double t) { return t * t * (3 - 2 * t); }

// Linear gradient between two muted colours along a random direction.
void paint_gradient(ShapesRandom& random, cv::Mat& canvas) {
  const cv::Vec3f from = random_color(random, 0.0, 0.6, 0.25, 0.95);
  const cv::Vec3f to = random_color(random, 0.0, 0.6, 0.25, 0.95);
  const double angle = random.uniform(0, 2 * kPi);
  const double c = std::cos(angle), s = std::sin(angle);
  const double half_extent = 0.5 * (std::fabs(c * canvas.cols) + std::fabs(s * canvas.rows));
  for (int y = 0; y < canvas.rows; ++y) {
    cv::Vec3f* row = canvas.ptr<cv::Vec3f>(y);
    for (int x = 0; x < canvas.cols; ++x) {
      const double d = (x + 0.5 - canvas.cols / 2.0) * c + (y + 0.5 - canvas.rows / 2.0) * s;
      const float t = static_cast<float>(0.5 + 0.5 * d / half_extent);
      row[x] = from * (1 - t) + to * t;
    }
  }
}

// Value noise: random colour offsets on a coarse grid, interpolated smoothly.
void add_smooth_variation(ShapesRandom& random, cv::Mat& canvas) {
  const int cells_x = random.uniform_int(2, 5), cells_y = random.uniform_int(2, 5);
  const double amplitude = random.uniform(15, 40);
  std::vector<cv::Vec3f> nodes((cells_x + 1) * (cells_y + 1));
  for (cv::Vec3f& node : nodes) {
    for (int ch = 0; ch < 3; ++ch) node[ch] = static_cast<float>(random.uniform(-1, 1) * amplitude);
  }
  for (int y = 0; y < canvas.rows; ++y) {
    const double gy = (y + 0.5) * cells_y / canvas.rows;
    const int iy = std::min(static_cast<int>(gy), cells_y - 1);
    const float ty = static_cast<float>(smoothstep(gy - iy));
    cv::Vec3f* row = canvas.ptr<cv::Vec3f>(y);
    for (int x = 0; x < canvas.cols; ++x) {
      const double gx = (x + 0.5) * cells_x / canvas.cols;
      const int ix = std::min(static_cast<int>(gx), cells_x - 1);
      const float tx = static_cast<float>(smoothstep(gx - ix));
      const cv::Vec3f* n0 = &nodes[iy * (cells_x + 1) + ix];
      const cv::Vec3f* n1 = n0 + (cells_x + 1);
      row[x] += (n0[0] * (1 - tx) + n0[1] * tx) * (1 - ty) + (n1[0] * (1 - tx) + n1[1] * tx) * ty;
    }
  }
}

// Faint straight or bent lines of random colour, anti-aliased.
void add_lines(ShapesRandom& random, cv::Mat& canvas) {
  const int count = random.uniform_int(2, 7);
  cv::Mat layer(canvas.size(), CV_8U);
  for (int i = 0; i < count; ++i) {
    layer.setTo(0);
    std::vector<cv::Point> points(random.uniform_int(2, 4));
    for (cv::Point& p : points) {
      p = {static_cast<int>(random.uniform(-0.2, 1.2) * canvas.cols),
           static_cast<int>(random.uniform(-0.2, 1.2) * canvas.rows)};
    }
    cv::polylines(layer, points, false, cv::Scalar(255), random.uniform_int(1, 2), cv::LINE_AA);
    const cv::Vec3f color = random_color(random, 0.0, 1.0, 0.1, 1.0);
    const float alpha = static_cast<float>(random.uniform(0.1, 0.3)) / 255.0f;
    for (int y = 0; y < canvas.rows; ++y) {
      const uint8_t* weight = layer.ptr<uint8_t>(y);
      cv::Vec3f* row = canvas.ptr<cv::Vec3f>(y);
      for (int x = 0; x < canvas.cols; ++x) {
        if (weight[x] == 0) continue;
        const float a = alpha * weight[x];
        row[x] = row[x] * (1 - a) + color * a;
      }
    }
  }
}

// Faint soft elliptical Gaussian blobs: colour patches without edges.
void add_blobs(ShapesRandom& random, cv::Mat& canvas) {
  const int count = random.uniform_int(1, 4);
  const double side = std::min(canvas.cols, canvas.rows);
  for (int i = 0; i < count; ++i) {
    const double cx = random.uniform(0, canvas.cols), cy = random.uniform(0, canvas.rows);
    const double sx = random.uniform(0.04, 0.15) * side, sy = random.uniform(0.04, 0.15) * side;
    const double angle = random.uniform(0, kPi), c = std::cos(angle), s = std::sin(angle);
    const cv::Vec3f color = random_color(random, 0.0, 1.0, 0.1, 1.0);
    const double alpha = random.uniform(0.1, 0.3);
    const double reach = 3 * std::max(sx, sy);
    const int y0 = std::max(0, static_cast<int>(cy - reach));
    const int y1 = std::min(canvas.rows, static_cast<int>(cy + reach) + 1);
    const int x0 = std::max(0, static_cast<int>(cx - reach));
    const int x1 = std::min(canvas.cols, static_cast<int>(cx + reach) + 1);
    for (int y = y0; y < y1; ++y) {
      cv::Vec3f* row = canvas.ptr<cv::Vec3f>(y);
      for (int x = x0; x < x1; ++x) {
        const double dx = x + 0.5 - cx, dy = y + 0.5 - cy;
        const double u = (c * dx + s * dy) / sx, v = (c * dy - s * dx) / sy;
        const float a = static_cast<float>(alpha * std::exp(-0.5 * (u * u + v * v)));
        row[x] = row[x] * (1 - a) + color * a;
      }
    }
  }
}

}  // namespace

cv::Vec3f random_color(ShapesRandom& random, double min_saturation, double max_saturation,
                       double min_value, double max_value) {
  const double hue = random.uniform(0, 6);
  const double saturation = random.uniform(min_saturation, max_saturation);
  const double value = random.uniform(min_value, max_value) * 255;
  const int sector = std::min(static_cast<int>(hue), 5);
  const double f = hue - sector;
  const double p = value * (1 - saturation), q = value * (1 - saturation * f);
  const double t = value * (1 - saturation * (1 - f));
  double r = value, g = t, b = p;
  switch (sector) {
    case 1:
      r = q, g = value, b = p;
      break;
    case 2:
      r = p, g = value, b = t;
      break;
    case 3:
      r = p, g = q, b = value;
      break;
    case 4:
      r = t, g = p, b = value;
      break;
    case 5:
      r = value, g = p, b = q;
      break;
    default:
      break;
  }
  return cv::Vec3f(static_cast<float>(b), static_cast<float>(g), static_cast<float>(r));
}

cv::Mat render_background(ShapesRandom& random, int width, int height) {
  cv::Mat canvas(height, width, CV_32FC3);
  paint_gradient(random, canvas);
  add_smooth_variation(random, canvas);
  add_blobs(random, canvas);
  add_lines(random, canvas);
  return canvas;
}

}  // namespace detkit::data
