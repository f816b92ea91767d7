#include "detkit/data/shapes/shapes_scene.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "detkit/data/shapes/shapes_background.h"
#include "detkit/data/shapes/shapes_geometry.h"
#include "detkit/data/shapes/shapes_polygons.h"
#include "detkit/data/shapes/shapes_random.h"
#include "detkit/data/shapes/shapes_stuff.h"

namespace detkit::data {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int kPlacementTries = 30;
constexpr int kColorCandidates = 12;

// Whether `visible` is still annotatable: big enough, no holes, no tiny fragments.
bool acceptable_visible_part(const cv::Mat& visible, int full_area, double min_fraction) {
  const int area = cv::countNonZero(visible);
  if (area < std::max<double>(kMinFragmentArea, min_fraction * full_area)) return false;
  if (trace_mask_outline(visible).num_holes > 0) return false;
  cv::Mat labels, stats, centroids;
  const int n = cv::connectedComponentsWithStats(visible, labels, stats, centroids, 8);
  for (int i = 1; i < n; ++i) {
    if (stats.at<int>(i, cv::CC_STAT_AREA) < kMinFragmentArea) return false;
  }
  return true;
}

// Whether drawing `mask` on top keeps every earlier object annotatable.
bool occlusion_acceptable(const std::vector<SceneObject>& objects, const cv::Mat& mask,
                          double min_fraction) {
  for (const SceneObject& object : objects) {
    cv::Mat remaining = object.visible.clone();
    remaining.setTo(0, mask);
    if (cv::countNonZero(remaining) == cv::countNonZero(object.visible)) continue;
    if (!acceptable_visible_part(remaining, object.full_area, min_fraction)) return false;
  }
  return true;
}

// Of several random colours, the one farthest from most pixels just outside the shape (the 10th
// percentile of distances, so thin clutter lines do not decide).
cv::Vec3f contrasting_color(ShapesRandom& random, const cv::Mat& canvas, const cv::Mat& mask) {
  cv::Mat grown, ring;
  cv::dilate(mask, grown, cv::Mat(), cv::Point(-1, -1), 2);
  cv::bitwise_xor(grown, mask, ring);
  std::vector<cv::Vec3f> around;
  for (int y = 0; y < ring.rows; ++y) {
    const uint8_t* in_ring = ring.ptr<uint8_t>(y);
    const cv::Vec3f* row = canvas.ptr<cv::Vec3f>(y);
    for (int x = 0; x < ring.cols; ++x) {
      if (in_ring[x]) around.push_back(row[x]);
    }
  }
  cv::Vec3f best;
  double best_score = -1;
  std::vector<double> distances(around.size());
  for (int i = 0; i < kColorCandidates; ++i) {
    const cv::Vec3f color = random_color(random, 0.35, 1.0, 0.3, 1.0);
    for (size_t j = 0; j < around.size(); ++j) distances[j] = cv::norm(color - around[j]);
    double score = 1e9;
    if (!distances.empty()) {
      auto tenth = distances.begin() + distances.size() / 10;
      std::nth_element(distances.begin(), tenth, distances.end());
      score = *tenth;
    }
    if (score > best_score) {
      best = color;
      best_score = score;
    }
  }
  return best;
}

// Blends the shape into the canvas by its coverage, with a gentle linear shading across it.
void paint_shape(ShapesRandom& random, const ShapeRaster& raster, const cv::Vec3f& color,
                 cv::Mat& canvas) {
  const double angle = random.uniform(0, 2 * kPi), strength = random.uniform(0, 0.25);
  const double c = std::cos(angle), s = std::sin(angle);
  const double cx = raster.box.width / 2.0, cy = raster.box.height / 2.0;
  const double radius = std::max(1.0, std::max(cx, cy));
  for (int y = 0; y < raster.box.height; ++y) {
    const uint8_t* coverage = raster.coverage.ptr<uint8_t>(y);
    cv::Vec3f* row = canvas.ptr<cv::Vec3f>(raster.box.y + y) + raster.box.x;
    for (int x = 0; x < raster.box.width; ++x) {
      if (coverage[x] == 0) continue;
      const double along = ((x + 0.5 - cx) * c + (y + 0.5 - cy) * s) / radius;
      const float shade = static_cast<float>(1 + strength * along);
      const float a = static_cast<float>(coverage[x]) / kFullCoverage;
      row[x] = row[x] * (1 - a) + color * (shade * a);
    }
  }
}

// Sensor-like noise, then rounding to 8 bits.
cv::Mat finish_image(ShapesRandom& random, const cv::Mat& canvas) {
  const double sigma = random.uniform(2, 7);
  cv::Mat image(canvas.size(), CV_8UC3);
  for (int y = 0; y < canvas.rows; ++y) {
    const float* in = canvas.ptr<float>(y);
    uint8_t* out = image.ptr<uint8_t>(y);
    for (int i = 0; i < 3 * canvas.cols; ++i) {
      const double v = std::floor(in[i] + sigma * random.noise() + 0.5);
      out[i] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
    }
  }
  return image;
}

}  // namespace

ShapesScene render_scene(uint64_t seed, const SceneOptions& options) {
  ShapesRandom random(seed);
  const int width = options.width, height = options.height;
  ShapesScene scene;
  cv::Mat canvas;
  if (options.stuff) {
    StuffBackground background = render_stuff_background(random, width, height);
    canvas = background.canvas;
    scene.stuff = background.labels;
  } else {
    canvas = render_background(random, width, height);
  }
  const double side = std::min(width, height);
  const double max_size = std::max(4.0, options.max_size_fraction * side);
  const double min_size = std::min(max_size, std::max(4.0, options.min_size_fraction * side));

  const int count = random.uniform_int(options.min_objects, options.max_objects);
  for (int k = 0; k < count; ++k) {
    for (int attempt = 0; attempt < kPlacementTries; ++attempt) {
      const ShapeOutline outline = sample_shape(random, width, height, min_size, max_size);
      ShapeRaster raster = rasterise_shape(outline, width, height);
      SceneObject object{outline.category_id, raster.mask, cv::countNonZero(raster.mask),
                         outline.points};
      if (!acceptable_visible_part(object.visible, object.full_area, 1.0)) continue;
      if (!occlusion_acceptable(scene.objects, raster.mask, options.min_visible_fraction)) {
        continue;
      }
      for (SceneObject& earlier : scene.objects) earlier.visible.setTo(0, raster.mask);
      paint_shape(random, raster, contrasting_color(random, canvas, raster.mask), canvas);
      scene.objects.push_back(std::move(object));
      break;
    }
  }
  scene.image = finish_image(random, canvas);
  return scene;
}

}  // namespace detkit::data
