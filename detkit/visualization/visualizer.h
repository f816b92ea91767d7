#pragma once
// Drawing detections and ground truth onto images (Detectron2's Visualizer, with OpenCV): a
// translucent mask with an outline, a box and a label ("person 87%") on a filled background,
// each instance in its own colour; keypoints scoring above a threshold as red dots joined by the
// dataset's skeleton (Detectron2's keypoint_connection_rules, each edge in its colour). Images
// smaller than VisualizerOptions::min_short_side are drawn enlarged so that labels stay legible.
//
//   cv::Mat canvas = draw_predictions(bgr, instances, class_names);
//   data::write_image("out.png", canvas);  // detkit/data/image/image_write.h
#include <ATen/core/Tensor.h>

#include <array>
#include <opencv2/core.hpp>
#include <optional>
#include <string>
#include <vector>

#include "detkit/structures/instances.h"

namespace detkit::visualization {

struct VisualizerOptions {
  double mask_alpha = 0.45;          // opacity of the mask fill
  int min_short_side = 400;          // smaller images are enlarged (integer factor) before drawing
  double keypoint_threshold = 0.05;  // Detectron2's _KEYPOINT_THRESHOLD
  /// Keypoint index pairs to join and their colours (RGB): Metadata::keypoint_skeleton().
  std::vector<std::pair<std::array<int64_t, 2>, std::array<int, 3>>> keypoint_skeleton;
};

/// One object to draw, in the image's pixel coordinates.
struct DrawnInstance {
  std::array<double, 4> box{};  // XYXY
  std::string label;            // empty: no label
  cv::Mat mask;                 // CV_8U, image size, non-zero inside; empty: no mask
  std::vector<std::vector<cv::Point2d>> polygons;  // drawn as the mask when `mask` is empty
  std::vector<std::array<double, 3>> keypoints;    // x, y, score (or visibility); empty: none
  std::optional<cv::Scalar> color;                 // BGR; none: instance_color of its index
  bool draw_box = true;              // false: `box` only places the label and orders drawing
  std::vector<cv::Point2d> outline;  // a closed outline drawn in the colour (a rotated box)
};

/// The integer factor (1..8) the draw_* functions enlarge `bgr` by so that its short side
/// reaches options.min_short_side, and `bgr` enlarged by it (a copy when the factor is 1).
int enlargement_factor(const cv::Mat& bgr, const VisualizerOptions& options);
cv::Mat enlarged(const cv::Mat& bgr, int factor);

/// The colour of the k-th instance (BGR): hues spread by the golden ratio, so neighbours differ.
cv::Scalar instance_color(size_t k);

/// Draws `instances` (larger boxes first, labels last so none is hidden) onto a copy of `bgr`
/// (CV_8UC3). The result is `bgr`'s size times the enlargement factor.
cv::Mat draw_instances(const cv::Mat& bgr, const std::vector<DrawnInstance>& instances,
                       const VisualizerOptions& options = {});

/// "name" from `class_names`, or "class N" when the index is outside it.
std::string class_label(int64_t class_index, const std::vector<std::string>& class_names);

/// A model's predictions (pred_boxes, scores, pred_classes, optional pred_masks (R, H, W) and
/// pred_keypoints (R, K, 3)), labelled "name 87%".
cv::Mat draw_predictions(const cv::Mat& bgr, const structures::Instances& predictions,
                         const std::vector<std::string>& class_names,
                         const VisualizerOptions& options = {});

/// A ProposalNetwork's proposals (proposal_boxes, objectness_logits; best first): the first
/// `max_drawn`, labelled with their objectness probability, "objectness 87%".
cv::Mat draw_proposals(const cv::Mat& bgr, const structures::Instances& proposals,
                       int64_t max_drawn, const VisualizerOptions& options = {});

/// Training targets (gt_boxes, gt_classes, optional gt_masks as polygons or bitmasks and
/// gt_keypoints (N, K, 3), visible and labelled points drawn), labelled with the class name.
cv::Mat draw_ground_truth(const cv::Mat& bgr, const structures::Instances& targets,
                          const std::vector<std::string>& class_names,
                          const VisualizerOptions& options = {});

/// A (3, H, W) float image of 0..255 in `format` ("BGR" or "RGB") order as (H, W, 3) uint8 BGR.
cv::Mat tensor_to_bgr_image(const at::Tensor& chw, const std::string& format);

}  // namespace detkit::visualization
