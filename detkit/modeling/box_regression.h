#pragma once
// Box2BoxTransform: R-CNN's box parameterisation (dx, dy, dw, dh), as Detectron2's
// detectron2/modeling/box_regression.py defines it.
#include <ATen/core/Tensor.h>

#include <array>
#include <cmath>
#include <string>

#include "detkit/config/cfg_node.h"

namespace detkit::modeling {

/// Largest dw / dh apply_deltas lets through exp(): what turns a 16 px box into a 1000 px one.
inline const double kDefaultScaleClamp = std::log(1000.0 / 16.0);

/// Deltas (dx, dy, dw, dh) move a box's centre by (dx * width, dy * height) and scale its width
/// and height by (exp(dw), exp(dh)); the weights (wx, wy, ww, wh) multiply the deltas, so a
/// regression head predicts (wx * dx, wy * dy, ww * dw, wh * dh). Widths are x2 - x1 (no +1).
/// All arithmetic is float32, as in Detectron2.
class Box2BoxTransform {
 public:
  /// weights: (wx, wy, ww, wh), each > 0 (MODEL.RPN.BBOX_REG_WEIGHTS, (1, 1, 1, 1); the box
  /// head uses (10, 10, 5, 5)). scale_clamp: the largest dw, dh apply_deltas exponentiates.
  explicit Box2BoxTransform(std::array<double, 4> weights, double scale_clamp = kDefaultScaleClamp);

  /// src_boxes, target_boxes: (R, 4) XYXY, src boxes of positive width.
  /// Returns (R, 4) weighted deltas that turn each src box into its target box.
  at::Tensor get_deltas(const at::Tensor& src_boxes, const at::Tensor& target_boxes) const;

  /// deltas: (R, k * 4), k >= 1 transforms per box (e.g. one per class); boxes: (R, 4) XYXY.
  /// Returns (R, k * 4) float32 boxes: column block j is boxes moved by deltas' block j.
  at::Tensor apply_deltas(const at::Tensor& deltas, const at::Tensor& boxes) const;

  const std::array<double, 4>& weights() const { return weights_; }
  double scale_clamp() const { return scale_clamp_; }

 private:
  std::array<double, 4> weights_;
  double scale_clamp_;
};

/// The 4 weights under `key` (MODEL.RPN.BBOX_REG_WEIGHTS, MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS);
/// another count is a detkit::Error naming the key.
std::array<double, 4> box_reg_weights_from_config(const config::CfgNode& cfg,
                                                  const std::string& key);

}  // namespace detkit::modeling
