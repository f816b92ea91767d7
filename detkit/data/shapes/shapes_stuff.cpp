#include "detkit/data/shapes/shapes_stuff.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "detkit/data/shapes/shapes_background.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

constexpr double kPi = 3.14159265358979323846;

struct Region {
  cv::Point2d centre;
  int category_id = kStripes;
  cv::Vec3f dark, light;  // the texture's two colours
  double angle = 0;       // of the stripes or of the checkerboard's grid
  double period = 8;      // pixels: a stripe pair, a checkerboard cell pair, a speckle cell
  double wave_amplitude = 0, wave_frequency = 0, wave_phase = 0;  // the border's wobble
};

Region random_region(ShapesRandom& random, int width, int height) {
  Region r;
  r.centre = {random.uniform(0, width), random.uniform(0, height)};
  r.category_id = kStuffCategories[random.uniform_int(0, 2)];
  const cv::Vec3f base = random_color(random, 0.0, 0.7, 0.3, 0.8);
  const float contrast = static_cast<float>(random.uniform(0.35, 0.6));
  r.dark = base * (1 - contrast);
  r.light = base + (cv::Vec3f(255, 255, 255) - base) * contrast;
  r.angle = random.uniform(0, kPi);
  r.period = r.category_id == kGrain ? random.uniform(2, 3.5) : random.uniform(8, 16);
  const double side = std::min(width, height);
  r.wave_amplitude = random.uniform(0.02, 0.08) * side;
  r.wave_frequency = random.uniform(1, 3) * 2 * kPi / side;
  r.wave_phase = random.uniform(0, 2 * kPi);
  return r;
}

// Distance to the region's centre, its border made wavy by a sinusoid across the direction.
double warped_distance(const Region& r, double x, double y) {
  const double dx = x - r.centre.x, dy = y - r.centre.y;
  return std::hypot(dx, dy) +
         r.wave_amplitude * std::sin(r.wave_frequency * (x + y) + r.wave_phase);
}

// Hash of integer cell coordinates to [0, 1): the speckle pattern, fixed by the region's seed.
double cell_hash(uint64_t seed, int64_t cx, int64_t cy) {
  uint64_t z = seed ^ (static_cast<uint64_t>(cx) * 0x9E3779B97F4A7C15ull) ^
               (static_cast<uint64_t>(cy) * 0xC2B2AE3D27D4EB4Full);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

// The texture's mix between dark (0) and light (1) at pixel centre (x, y).
float texture(const Region& r, uint64_t seed, double x, double y) {
  const double c = std::cos(r.angle), s = std::sin(r.angle);
  const double u = (x * c + y * s) / r.period, v = (y * c - x * s) / r.period;
  switch (r.category_id) {
    case kStripes:  // smooth-edged stripes: half a period light, half dark
      return static_cast<float>(0.5 + 0.5 * std::tanh(4 * std::sin(2 * kPi * u)));
    case kChecks: {
      const int64_t a = static_cast<int64_t>(std::floor(2 * u));
      const int64_t b = static_cast<int64_t>(std::floor(2 * v));
      return ((a + b) & 1) ? 1.0f : 0.0f;
    }
    default:  // kGrain: independent cells, light or dark at random
      return cell_hash(seed, static_cast<int64_t>(std::floor(u)),
                       static_cast<int64_t>(std::floor(v))) < 0.5
                 ? 0.0f
                 : 1.0f;
  }
}

}  // namespace

const char* stuff_category_name(int category_id) {
  switch (category_id) {
    case kStripes:
      return "stripes";
    case kChecks:
      return "checks";
    case kGrain:
      return "grain";
    default:
      throw Error("stuff_category_name: unknown stuff category id " + std::to_string(category_id));
  }
}

StuffBackground render_stuff_background(ShapesRandom& random, int width, int height) {
  std::vector<Region> regions(random.uniform_int(2, 4));
  for (Region& r : regions) r = random_region(random, width, height);
  std::vector<uint64_t> seeds(regions.size());
  for (uint64_t& seed : seeds) seed = static_cast<uint64_t>(random.uniform() * 0x1.0p53);

  StuffBackground background{cv::Mat(height, width, CV_32FC3), cv::Mat(height, width, CV_8U)};
  for (int y = 0; y < height; ++y) {
    cv::Vec3f* row = background.canvas.ptr<cv::Vec3f>(y);
    uint8_t* label = background.labels.ptr<uint8_t>(y);
    for (int x = 0; x < width; ++x) {
      const double px = x + 0.5, py = y + 0.5;
      size_t nearest = 0;
      double best = warped_distance(regions[0], px, py);
      for (size_t k = 1; k < regions.size(); ++k) {
        const double d = warped_distance(regions[k], px, py);
        if (d < best) best = d, nearest = k;
      }
      const Region& r = regions[nearest];
      const float t = texture(r, seeds[nearest], px, py);
      row[x] = r.dark * (1 - t) + r.light * t;
      label[x] = static_cast<uint8_t>(r.category_id);
    }
  }
  return background;
}

}  // namespace detkit::data
