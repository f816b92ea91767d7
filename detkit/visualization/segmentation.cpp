#include "detkit/visualization/segmentation.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "detkit/utils/error.h"

namespace detkit::visualization {
namespace {

struct Rgb {
  double r, g, b;  // 0..1
};

cv::Scalar to_bgr(const Rgb& c) { return {c.b * 255, c.g * 255, c.r * 255}; }
Rgb to_rgb(const cv::Scalar& bgr) { return {bgr[2] / 255, bgr[1] / 255, bgr[0] / 255}; }

// Detectron2's _OFF_WHITE: the outline of stuff regions.
constexpr Rgb kOffWhite{1.0, 1.0, 240.0 / 255};
// Detectron2's _LARGE_MASK_AREA_THRESH: besides the largest, parts of a stuff region this large
// (pixels) get a label too.
constexpr int kLargeMaskArea = 120000;
// Detectron2's _SMALL_OBJECT_AREA_THRESH: the label of a thing whose box is smaller, or less
// than 40 px high, goes beside it so that it does not cover it.
constexpr double kSmallObjectArea = 1000;
constexpr double kSmallObjectHeight = 40;

// The first entries of Detectron2's colormap (detectron2/utils/colormap.py, RGB).
constexpr std::array<Rgb, 24> kColormap{{
    {0.000, 0.447, 0.741}, {0.850, 0.325, 0.098}, {0.929, 0.694, 0.125}, {0.494, 0.184, 0.556},
    {0.466, 0.674, 0.188}, {0.301, 0.745, 0.933}, {0.635, 0.078, 0.184}, {0.300, 0.300, 0.300},
    {0.600, 0.600, 0.600}, {1.000, 0.000, 0.000}, {1.000, 0.500, 0.000}, {0.749, 0.749, 0.000},
    {0.000, 1.000, 0.000}, {0.000, 0.000, 1.000}, {0.667, 0.000, 1.000}, {0.333, 0.333, 0.000},
    {0.333, 0.667, 0.000}, {0.333, 1.000, 0.000}, {0.667, 0.333, 0.000}, {0.667, 0.667, 0.000},
    {0.667, 1.000, 0.000}, {1.000, 0.333, 0.000}, {1.000, 0.667, 0.000}, {1.000, 1.000, 0.000},
}};

double hls_component(double m1, double m2, double hue) {
  hue -= std::floor(hue);
  if (hue < 1.0 / 6) return m1 + (m2 - m1) * hue * 6;
  if (hue < 0.5) return m2;
  if (hue < 2.0 / 3) return m1 + (m2 - m1) * (2.0 / 3 - hue) * 6;
  return m1;
}

// Detectron2's _change_color_brightness (through HLS, as Python's colorsys): `factor` > 0 lightens.
Rgb change_brightness(const Rgb& c, double factor) {
  const double hi = std::max({c.r, c.g, c.b}), lo = std::min({c.r, c.g, c.b});
  const double l = (hi + lo) / 2;
  double h = 0, s = 0;
  if (hi != lo) {
    const double d = hi - lo;
    s = l <= 0.5 ? d / (hi + lo) : d / (2 - hi - lo);
    const double rc = (hi - c.r) / d, gc = (hi - c.g) / d, bc = (hi - c.b) / d;
    h = c.r == hi ? bc - gc : c.g == hi ? 2 + rc - bc : 4 + gc - rc;
    h = h / 6 - std::floor(h / 6);
  }
  const double lightness = std::clamp(l + factor * l, 0.0, 1.0);
  if (s == 0) return {lightness, lightness, lightness};
  const double m2 = lightness <= 0.5 ? lightness * (1 + s) : lightness + s - lightness * s;
  const double m1 = 2 * lightness - m2;
  return {std::clamp(hls_component(m1, m2, h + 1.0 / 3), 0.0, 1.0),
          std::clamp(hls_component(m1, m2, h), 0.0, 1.0),
          std::clamp(hls_component(m1, m2, h - 1.0 / 3), 0.0, 1.0)};
}

// Detectron2's draw_text keeps text legible on its dark background: no channel below 0.2, the
// brightest at least 0.8.
Rgb legible_on_dark(Rgb c) {
  std::array<double*, 3> channels{&c.r, &c.g, &c.b};
  for (double* v : channels) *v = std::max(*v, 0.2);
  double* brightest = *std::max_element(channels.begin(), channels.end(),
                                        [](const double* a, const double* b) { return *a < *b; });
  *brightest = std::max(*brightest, 0.8);
  return c;
}

// A label as Detectron2 places it on a mask: centred on `at` horizontally, its top at `at`.
struct Label {
  std::string text;
  cv::Point2d at;  // original image pixels
  cv::Scalar color;
};

// One region to fill: a stuff class or a thing, and where its label goes.
struct Region {
  cv::Mat mask;  // CV_8U, image size, 255 inside
  cv::Scalar fill, edge;
  std::vector<Label> labels;
};

// The median of the mask's pixel coordinates, x and y each (as numpy's median of nonzero()).
cv::Point2d median_point(const cv::Mat& mask) {
  std::vector<cv::Point> points;
  cv::findNonZero(mask, points);
  if (points.empty()) return {0, 0};
  auto median = [&](auto coordinate) {
    std::vector<double> v(points.size());
    std::transform(points.begin(), points.end(), v.begin(), coordinate);
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  return {median([](const cv::Point& p) { return double(p.x); }),
          median([](const cv::Point& p) { return double(p.y); })};
}

// Detectron2's _draw_text_in_mask: the median of the largest part of the region, and of every
// other very large part (8-connected).
std::vector<cv::Point2d> stuff_label_points(const cv::Mat& mask) {
  cv::Mat parts, stats, centroids;
  const int n = cv::connectedComponentsWithStats(mask, parts, stats, centroids, 8);
  if (n <= 1) return {};
  int largest = 1;
  for (int k = 2; k < n; ++k)
    if (stats.at<int>(k, cv::CC_STAT_AREA) > stats.at<int>(largest, cv::CC_STAT_AREA)) largest = k;
  std::vector<cv::Point2d> points;
  for (int k = 1; k < n; ++k) {
    if (k == largest || stats.at<int>(k, cv::CC_STAT_AREA) > kLargeMaskArea) {
      points.push_back(median_point(parts == k));
    }
  }
  return points;
}

// Detectron2's overlay_instances for a mask without a box: the label at the mask's median, or
// beside a small object (below it, or right of it at the image's bottom edge).
cv::Point2d thing_label_point(const cv::Mat& mask) {
  const cv::Rect box = cv::boundingRect(mask);
  const double x0 = box.x, y0 = box.y, x1 = box.x + box.width, y1 = box.y + box.height;
  if ((y1 - y0) * (x1 - x0) >= kSmallObjectArea && y1 - y0 >= kSmallObjectHeight) {
    return median_point(mask);
  }
  if (y1 >= mask.rows - 5) return {x1, y0};
  return {x0, y1};
}

Label region_label(const std::string& text, const cv::Point2d& at, const cv::Scalar& fill) {
  return {text, at, to_bgr(legible_on_dark(change_brightness(to_rgb(fill), 0.7)))};
}

// The image's integer map as a CV_32S matrix sharing the tensor's memory.
cv::Mat int_map(const at::Tensor& contiguous_int32) {
  return cv::Mat(static_cast<int>(contiguous_int32.size(0)),
                 static_cast<int>(contiguous_int32.size(1)), CV_32S,
                 contiguous_int32.data_ptr<int32_t>());
}

at::Tensor checked_int32_map(const at::Tensor& map, const cv::Mat& bgr, const char* what) {
  if (bgr.empty() || bgr.type() != CV_8UC3)
    throw Error(std::string(what) + ": expected a CV_8UC3 image");
  if (map.dim() != 2 || map.size(0) != bgr.rows || map.size(1) != bgr.cols) {
    throw Error(fmt::format("{}: the map must be the image's size ({}, {}), got {}", what, bgr.rows,
                            bgr.cols, fmt::join(map.sizes(), ", ")));
  }
  return map.to(at::kCPU, at::kInt).contiguous();
}

void fill_region(cv::Mat& canvas, const cv::Mat& mask, const Region& region, double alpha) {
  cv::Mat blended;
  cv::addWeighted(canvas, 1.0 - alpha, cv::Mat(canvas.size(), CV_8UC3, region.fill), alpha, 0.0,
                  blended);
  blended.copyTo(canvas, mask);
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(mask.clone(), contours, cv::RETR_LIST, cv::CHAIN_APPROX_SIMPLE);
  cv::drawContours(canvas, contours, -1, region.edge, 1, cv::LINE_AA);
}

// Detectron2's draw_text: coloured text on a black box of opacity 0.8, kept inside the canvas.
void draw_label(cv::Mat& canvas, const Label& label, int factor) {
  constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;
  const double diagonal = std::sqrt(static_cast<double>(canvas.rows) * canvas.cols);
  const double scale = std::clamp(diagonal / 1100, 0.45, 1.2);
  const int thickness = scale >= 0.8 ? 2 : 1;
  int baseline = 0;
  const cv::Size size = cv::getTextSize(label.text, kFont, scale, thickness, &baseline);
  const int pad = std::max(2, static_cast<int>(std::lround(3 * scale)));
  const int width = size.width + 2 * pad, height = size.height + baseline + 2 * pad;
  const int x = std::clamp(static_cast<int>(std::lround(label.at.x * factor)) - width / 2, 0,
                           std::max(0, canvas.cols - width));
  const int y = std::clamp(static_cast<int>(std::lround(label.at.y * factor)), 0,
                           std::max(0, canvas.rows - height));
  const cv::Rect box = cv::Rect(x, y, width, height) & cv::Rect(0, 0, canvas.cols, canvas.rows);
  cv::Mat background = canvas(box);
  background *= 0.2;  // black at opacity 0.8
  cv::putText(canvas, label.text, cv::Point(x + pad, y + pad + size.height), kFont, scale,
              label.color, thickness, cv::LINE_AA);
}

// Fills every region in order, then draws every label, on the enlarged image.
cv::Mat draw_regions(const cv::Mat& bgr, const std::vector<Region>& regions, double alpha,
                     const VisualizerOptions& options) {
  const int factor = enlargement_factor(bgr, options);
  cv::Mat canvas = enlarged(bgr, factor);
  for (const Region& region : regions) {
    cv::Mat mask = region.mask;
    if (factor != 1) cv::resize(mask, mask, canvas.size(), 0, 0, cv::INTER_NEAREST);
    fill_region(canvas, mask, region, alpha);
  }
  for (const Region& region : regions)
    for (const Label& label : region.labels) draw_label(canvas, label, factor);
  return canvas;
}

Region stuff_region(cv::Mat mask, int64_t category, const std::string& text) {
  Region region{std::move(mask), class_color(category), to_bgr(kOffWhite), {}};
  for (const cv::Point2d& at : stuff_label_points(region.mask)) {
    region.labels.push_back(region_label(text, at, region.fill));
  }
  return region;
}

// Keys of `areas` with a positive area, largest first (ties: smaller key first).
template <typename Key>
std::vector<Key> largest_first(std::vector<std::pair<Key, int64_t>> areas) {
  std::stable_sort(areas.begin(), areas.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<Key> keys;
  for (const auto& [key, area] : areas)
    if (area > 0) keys.push_back(key);
  return keys;
}

}  // namespace

cv::Scalar class_color(int64_t k) {
  const int64_t n = static_cast<int64_t>(kColormap.size());
  return to_bgr(kColormap[static_cast<size_t>(((k % n) + n) % n)]);
}

std::string stuff_label(int64_t class_index, const std::vector<std::string>& stuff_classes) {
  if (class_index >= 0 && class_index < static_cast<int64_t>(stuff_classes.size())) {
    return stuff_classes[class_index];
  }
  return "stuff " + std::to_string(class_index);
}

std::map<int64_t, int64_t> value_areas(const at::Tensor& values) {
  std::map<int64_t, int64_t> areas;
  if (values.numel() == 0) return areas;
  const auto [unique, inverse, counts] =
      at::_unique2(values.to(at::kCPU, at::kLong).flatten(), /*sorted=*/true,
                   /*return_inverse=*/false, /*return_counts=*/true);
  const auto u = unique.accessor<int64_t, 1>();
  const auto c = counts.accessor<int64_t, 1>();
  for (int64_t i = 0; i < u.size(0); ++i) areas[u[i]] = c[i];
  return areas;
}

cv::Mat draw_sem_seg(const cv::Mat& bgr, const at::Tensor& labels,
                     const std::vector<std::string>& stuff_classes,
                     const VisualizerOptions& options) {
  const at::Tensor map = checked_int32_map(labels, bgr, "draw_sem_seg");
  const cv::Mat label_map = int_map(map);
  std::vector<std::pair<int64_t, int64_t>> drawn;
  for (const auto& [label, area] : value_areas(map)) {
    const bool named = label < static_cast<int64_t>(stuff_classes.size());
    if (label >= 0 && (stuff_classes.empty() || named)) drawn.emplace_back(label, area);
  }
  std::vector<Region> regions;
  for (int64_t label : largest_first(drawn)) {
    regions.push_back(stuff_region(label_map == static_cast<double>(label), label,
                                   stuff_label(label, stuff_classes)));
  }
  return draw_regions(bgr, regions, kSemSegAlpha, options);
}

cv::Mat draw_panoptic_seg(const cv::Mat& bgr, const structures::PanopticOutput& panoptic,
                          const std::vector<std::string>& thing_classes,
                          const std::vector<std::string>& stuff_classes,
                          const VisualizerOptions& options) {
  const at::Tensor map = checked_int32_map(panoptic.ids, bgr, "draw_panoptic_seg");
  const cv::Mat ids = int_map(map);
  const std::map<int64_t, int64_t> areas = value_areas(map);
  auto area_of = [&](int32_t id) {
    const auto it = areas.find(id);
    return it == areas.end() ? int64_t{0} : it->second;
  };
  // Stuff first, so that things stay visible on top; a thing keeps the colour of its position
  // among the segments' things, as draw_predictions colours the k-th instance.
  std::vector<std::pair<size_t, int64_t>> stuff, things;
  for (size_t k = 0; k < panoptic.segments.size(); ++k) {
    const structures::PanopticSegment& s = panoptic.segments[k];
    (s.isthing ? things : stuff).emplace_back(k, area_of(s.id));
  }
  std::vector<Region> regions;
  for (size_t k : largest_first(stuff)) {
    const structures::PanopticSegment& s = panoptic.segments[k];
    regions.push_back(stuff_region(ids == static_cast<double>(s.id), s.category_id,
                                   stuff_label(s.category_id, stuff_classes)));
  }
  std::map<size_t, size_t> thing_rank;
  for (const auto& [k, area] : things) thing_rank.emplace(k, thing_rank.size());
  for (size_t k : largest_first(things)) {
    const structures::PanopticSegment& s = panoptic.segments[k];
    const cv::Scalar color = instance_color(thing_rank.at(k));
    Region region{ids == static_cast<double>(s.id), color, color, {}};
    const std::string text =
        fmt::format("{} {:.0f}%", class_label(s.category_id, thing_classes), s.score * 100);
    region.labels.push_back(region_label(text, thing_label_point(region.mask), color));
    regions.push_back(std::move(region));
  }
  return draw_regions(bgr, regions, kPanopticAlpha, options);
}

}  // namespace detkit::visualization
