#include "detkit/visualization/visualizer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <opencv2/imgproc.hpp>

#include "detkit/utils/error.h"

namespace detkit::visualization {
namespace {

// HSV (all in 0..1) to a BGR scalar of 0..255.
cv::Scalar hsv_to_bgr(double h, double s, double v) {
  const double sector = h * 6.0;
  const int i = static_cast<int>(std::floor(sector)) % 6;
  const double f = sector - std::floor(sector);
  const double p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  double r = v, g = t, b = p;
  switch (i) {
    case 1:
      r = q, g = v, b = p;
      break;
    case 2:
      r = p, g = v, b = t;
      break;
    case 3:
      r = p, g = q, b = v;
      break;
    case 4:
      r = t, g = p, b = v;
      break;
    case 5:
      r = v, g = p, b = q;
      break;
    default:
      break;
  }
  return {b * 255, g * 255, r * 255};
}

// Scales `color` towards black by `factor` (0..1).
cv::Scalar darker(const cv::Scalar& color, double factor) {
  return {color[0] * factor, color[1] * factor, color[2] * factor};
}

// Black on light colours, white on dark ones.
cv::Scalar text_color_on(const cv::Scalar& bgr) {
  const double luminance = 0.114 * bgr[0] + 0.587 * bgr[1] + 0.299 * bgr[2];
  return luminance > 150 ? cv::Scalar(0, 0, 0) : cv::Scalar(255, 255, 255);
}

// The instance's mask at the canvas size (CV_8U, 255 inside), or an empty matrix.
cv::Mat canvas_mask(const DrawnInstance& instance, cv::Size canvas, int factor) {
  if (!instance.mask.empty()) {
    cv::Mat mask = instance.mask != 0;
    if (factor != 1) cv::resize(mask, mask, canvas, 0, 0, cv::INTER_NEAREST);
    return mask;
  }
  if (instance.polygons.empty()) return {};
  constexpr int kShift = 4;  // sub-pixel vertices: coordinates in 1/16 pixel
  std::vector<std::vector<cv::Point>> contours;
  for (const auto& polygon : instance.polygons) {
    std::vector<cv::Point> points;
    for (const cv::Point2d& p : polygon) {
      points.emplace_back(static_cast<int>(std::lround(p.x * factor * (1 << kShift))),
                          static_cast<int>(std::lround(p.y * factor * (1 << kShift))));
    }
    contours.push_back(std::move(points));
  }
  cv::Mat mask = cv::Mat::zeros(canvas, CV_8U);
  cv::fillPoly(mask, contours, cv::Scalar(255), cv::LINE_8, kShift);
  return mask;
}

void draw_mask(cv::Mat& canvas, const cv::Mat& mask, const cv::Scalar& color, double alpha) {
  cv::Mat blended;
  cv::addWeighted(canvas, 1.0 - alpha, cv::Mat(canvas.size(), CV_8UC3, color), alpha, 0.0, blended);
  blended.copyTo(canvas, mask);
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(mask.clone(), contours, cv::RETR_LIST, cv::CHAIN_APPROX_SIMPLE);
  cv::drawContours(canvas, contours, -1, darker(color, 0.7), 1, cv::LINE_AA);
}

struct LabelStyle {
  double font_scale;
  int thickness;
};

// A label on a filled box of the instance's colour, above the box's top-left corner, or just
// inside the box when there is no room above; kept inside the canvas.
void draw_label(cv::Mat& canvas, const std::string& text, const cv::Point& corner,
                const cv::Scalar& color, const LabelStyle& style) {
  constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;
  int baseline = 0;
  const cv::Size size = cv::getTextSize(text, kFont, style.font_scale, style.thickness, &baseline);
  const int pad = std::max(2, static_cast<int>(std::lround(3 * style.font_scale)));
  const int width = size.width + 2 * pad, height = size.height + baseline + 2 * pad;
  int x = std::clamp(corner.x, 0, std::max(0, canvas.cols - width));
  int y = corner.y - height;
  if (y < 0) y = std::clamp(corner.y, 0, std::max(0, canvas.rows - height));
  cv::rectangle(canvas, cv::Rect(x, y, width, height), color, cv::FILLED);
  cv::putText(canvas, text, cv::Point(x + pad, y + pad + size.height), kFont, style.font_scale,
              text_color_on(color), style.thickness, cv::LINE_AA);
}

std::vector<std::array<double, 4>> boxes_of(const at::Tensor& boxes) {
  at::Tensor b = boxes.detach().to(at::kCPU, at::kDouble).contiguous().reshape({-1, 4});
  std::vector<std::array<double, 4>> out(b.size(0));
  const double* data = b.data_ptr<double>();
  for (size_t i = 0; i < out.size(); ++i) std::copy(data + 4 * i, data + 4 * i + 4, out[i].begin());
  return out;
}

// (R, K, 3) keypoints, one list per instance.
std::vector<std::vector<std::array<double, 3>>> keypoints_of(const at::Tensor& keypoints) {
  at::Tensor k = keypoints.to(at::kCPU, at::kDouble).contiguous();
  std::vector<std::vector<std::array<double, 3>>> out(k.size(0));
  const double* p = k.data_ptr<double>();
  for (auto& instance : out) {
    instance.resize(k.size(1));
    for (auto& point : instance) point = {p[0], p[1], p[2]}, p += 3;
  }
  return out;
}

}  // namespace

cv::Scalar instance_color(size_t k) {
  constexpr double kGolden = 0.618033988749895;
  const double hue = std::fmod(0.08 + static_cast<double>(k) * kGolden, 1.0);
  // Alternate the saturation a little so that colours of similar hue still differ.
  const double saturation = (k / 7) % 2 == 0 ? 0.85 : 0.6;
  return hsv_to_bgr(hue, saturation, 0.95);
}

int enlargement_factor(const cv::Mat& bgr, const VisualizerOptions& options) {
  const int short_side = std::min(bgr.rows, bgr.cols);
  if (short_side <= 0 || short_side >= options.min_short_side) return 1;
  return std::min(8, (options.min_short_side + short_side - 1) / short_side);
}

cv::Mat enlarged(const cv::Mat& bgr, int factor) {
  if (factor == 1) return bgr.clone();
  cv::Mat canvas;
  cv::resize(bgr, canvas, cv::Size(bgr.cols * factor, bgr.rows * factor), 0, 0, cv::INTER_LINEAR);
  return canvas;
}

cv::Mat draw_instances(const cv::Mat& bgr, const std::vector<DrawnInstance>& instances,
                       const VisualizerOptions& options) {
  if (bgr.empty() || bgr.type() != CV_8UC3) throw Error("draw_instances: expected a CV_8UC3 image");
  const int factor = enlargement_factor(bgr, options);
  cv::Mat canvas = enlarged(bgr, factor);
  const double diagonal = std::sqrt(static_cast<double>(canvas.rows) * canvas.cols);
  const int line = std::max(1, static_cast<int>(std::lround(diagonal / 300)));
  LabelStyle style{std::clamp(diagonal / 1100, 0.45, 1.2), 1};
  if (style.font_scale >= 0.8) style.thickness = 2;

  // Larger objects first, so that small ones stay visible on top.
  std::vector<size_t> order(instances.size());
  std::iota(order.begin(), order.end(), 0);
  auto area = [&](size_t i) {
    const auto& b = instances[i].box;
    return std::max(0.0, b[2] - b[0]) * std::max(0.0, b[3] - b[1]);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return area(a) > area(b); });

  auto color_of = [&](size_t i) { return instances[i].color.value_or(instance_color(i)); };
  for (size_t i : order) {
    cv::Mat mask = canvas_mask(instances[i], canvas.size(), factor);
    if (!mask.empty()) draw_mask(canvas, mask, color_of(i), options.mask_alpha);
  }
  auto corner = [&](size_t i, int k) {
    return static_cast<int>(std::lround(instances[i].box[k] * factor));
  };
  for (size_t i : order) {
    if (instances[i].draw_box)
      cv::rectangle(canvas, cv::Point(corner(i, 0), corner(i, 1)),
                    cv::Point(corner(i, 2), corner(i, 3)), color_of(i), line, cv::LINE_AA);
    if (instances[i].outline.empty()) continue;
    std::vector<cv::Point> outline;
    for (const cv::Point2d& p : instances[i].outline)
      outline.emplace_back(static_cast<int>(std::lround(p.x * factor)),
                           static_cast<int>(std::lround(p.y * factor)));
    cv::polylines(canvas, outline, true, color_of(i), line, cv::LINE_AA);
  }
  const int radius = std::max(2, line + 1);
  for (size_t i : order) {
    const auto& k = instances[i].keypoints;
    auto shown = [&](int64_t j) {
      return j >= 0 && j < static_cast<int64_t>(k.size()) && k[j][2] > options.keypoint_threshold;
    };
    auto at = [&](int64_t j) {
      return cv::Point(static_cast<int>(std::lround(k[j][0] * factor)),
                       static_cast<int>(std::lround(k[j][1] * factor)));
    };
    for (const auto& [edge, rgb] : options.keypoint_skeleton) {
      if (!shown(edge[0]) || !shown(edge[1])) continue;
      cv::line(canvas, at(edge[0]), at(edge[1]), cv::Scalar(rgb[2], rgb[1], rgb[0]), line,
               cv::LINE_AA);
    }
    for (size_t j = 0; j < k.size(); ++j)
      if (shown(static_cast<int64_t>(j)))
        cv::circle(canvas, at(static_cast<int64_t>(j)), radius, cv::Scalar(0, 0, 255), cv::FILLED,
                   cv::LINE_AA);
  }
  for (size_t i : order) {
    if (instances[i].label.empty()) continue;
    draw_label(canvas, instances[i].label, cv::Point(corner(i, 0), corner(i, 1)), color_of(i),
               style);
  }
  return canvas;
}

std::string class_label(int64_t class_index, const std::vector<std::string>& class_names) {
  if (class_index >= 0 && class_index < static_cast<int64_t>(class_names.size())) {
    return class_names[class_index];
  }
  return "class " + std::to_string(class_index);
}

cv::Mat draw_predictions(const cv::Mat& bgr, const structures::Instances& predictions,
                         const std::vector<std::string>& class_names,
                         const VisualizerOptions& options) {
  const auto boxes = boxes_of(predictions.boxes("pred_boxes").tensor());
  at::Tensor scores = predictions.tensor("scores").to(at::kCPU, at::kDouble).contiguous();
  at::Tensor classes = predictions.tensor("pred_classes").to(at::kCPU, at::kLong).contiguous();
  at::Tensor masks;  // kept alive while the instances below point into it
  if (predictions.has("pred_masks")) {
    masks = predictions.tensor("pred_masks").to(at::kCPU, at::kByte).contiguous();
  }
  std::vector<DrawnInstance> instances(boxes.size());
  for (size_t i = 0; i < boxes.size(); ++i) {
    instances[i].box = boxes[i];
    instances[i].label =
        fmt::format("{} {:.0f}%", class_label(classes[i].item<int64_t>(), class_names),
                    scores[i].item<double>() * 100);
    if (masks.defined()) {
      instances[i].mask = cv::Mat(static_cast<int>(masks.size(1)), static_cast<int>(masks.size(2)),
                                  CV_8U, masks[i].data_ptr<uint8_t>());
    }
  }
  if (predictions.has("pred_keypoints")) {
    auto keypoints = keypoints_of(predictions.tensor("pred_keypoints"));
    for (size_t i = 0; i < instances.size(); ++i) instances[i].keypoints = std::move(keypoints[i]);
  }
  return draw_instances(bgr, instances, options);
}

cv::Mat draw_proposals(const cv::Mat& bgr, const structures::Instances& proposals,
                       int64_t max_drawn, const VisualizerOptions& options) {
  const int64_t n = std::min<int64_t>(proposals.size(), max_drawn);
  const auto boxes = boxes_of(proposals.boxes("proposal_boxes").tensor().narrow(0, 0, n));
  const at::Tensor probabilities =
      proposals.tensor("objectness_logits").narrow(0, 0, n).to(at::kCPU, at::kDouble).sigmoid();
  std::vector<DrawnInstance> instances(boxes.size());
  for (size_t i = 0; i < boxes.size(); ++i) {
    instances[i].box = boxes[i];
    instances[i].label = fmt::format("objectness {:.0f}%",
                                     probabilities[static_cast<int64_t>(i)].item<double>() * 100);
  }
  return draw_instances(bgr, instances, options);
}

cv::Mat draw_ground_truth(const cv::Mat& bgr, const structures::Instances& targets,
                          const std::vector<std::string>& class_names,
                          const VisualizerOptions& options) {
  const auto boxes = boxes_of(targets.boxes("gt_boxes").tensor());
  at::Tensor classes = targets.tensor("gt_classes").to(at::kCPU, at::kLong).contiguous();
  std::vector<DrawnInstance> instances(boxes.size());
  at::Tensor bitmasks;  // kept alive while the instances below point into it
  if (targets.has("gt_masks")) {
    const auto& field = targets.get("gt_masks");
    if (const auto* polygons = std::get_if<structures::PolygonMasks>(&field)) {
      for (size_t i = 0; i < instances.size(); ++i) {
        for (const auto& polygon : polygons->polygons()[i]) {
          std::vector<cv::Point2d> points;
          for (size_t k = 0; k + 1 < polygon.size(); k += 2) {
            points.emplace_back(polygon[k], polygon[k + 1]);
          }
          instances[i].polygons.push_back(std::move(points));
        }
      }
    } else if (const auto* masks = std::get_if<structures::BitMasks>(&field)) {
      bitmasks = masks->tensor().to(at::kCPU, at::kByte).contiguous();
      for (size_t i = 0; i < instances.size(); ++i) {
        instances[i].mask =
            cv::Mat(static_cast<int>(bitmasks.size(1)), static_cast<int>(bitmasks.size(2)), CV_8U,
                    bitmasks[i].data_ptr<uint8_t>());
      }
    }
  }
  for (size_t i = 0; i < instances.size(); ++i) {
    instances[i].box = boxes[i];
    instances[i].label = class_label(classes[i].item<int64_t>(), class_names);
  }
  if (targets.has("gt_keypoints")) {
    auto keypoints = keypoints_of(targets.tensor("gt_keypoints"));
    for (size_t i = 0; i < instances.size(); ++i) instances[i].keypoints = std::move(keypoints[i]);
  }
  return draw_instances(bgr, instances, options);
}

cv::Mat tensor_to_bgr_image(const at::Tensor& chw, const std::string& format) {
  if (chw.dim() != 3 || chw.size(0) != 3) {
    throw Error("tensor_to_bgr_image: expected a (3, H, W) image tensor");
  }
  at::Tensor hwc =
      chw.detach().to(at::kCPU).clamp(0, 255).round().to(at::kByte).permute({1, 2, 0}).contiguous();
  cv::Mat image = cv::Mat(static_cast<int>(hwc.size(0)), static_cast<int>(hwc.size(1)), CV_8UC3,
                          hwc.data_ptr<uint8_t>())
                      .clone();
  if (format == "RGB") cv::cvtColor(image, image, cv::COLOR_RGB2BGR);
  return image;
}

}  // namespace detkit::visualization
