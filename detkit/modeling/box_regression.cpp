#include "detkit/modeling/box_regression.h"

#include <ATen/ATen.h>

#include "detkit/utils/error.h"

namespace detkit::modeling {
namespace {

// (R) widths, heights and centres of (R, 4) XYXY boxes, in the order of operations Detectron2
// uses (centre = x1 + 0.5 * width).
struct Geometry {
  at::Tensor widths, heights, ctr_x, ctr_y;
};

Geometry geometry(const at::Tensor& boxes) {
  Geometry g;
  g.widths = boxes.select(1, 2) - boxes.select(1, 0);
  g.heights = boxes.select(1, 3) - boxes.select(1, 1);
  g.ctr_x = boxes.select(1, 0) + 0.5 * g.widths;
  g.ctr_y = boxes.select(1, 1) + 0.5 * g.heights;
  return g;
}

void check_boxes(const at::Tensor& boxes, const char* name) {
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4, "Box2BoxTransform: ", name,
              " must be (R, 4), got ", boxes.sizes());
}

}  // namespace

Box2BoxTransform::Box2BoxTransform(std::array<double, 4> weights, double scale_clamp)
    : weights_(weights), scale_clamp_(scale_clamp) {
  for (double w : weights_) {
    if (!(w > 0)) {
      throw Error("Box2BoxTransform: weights must be positive, got (" +
                  std::to_string(weights_[0]) + ", " + std::to_string(weights_[1]) + ", " +
                  std::to_string(weights_[2]) + ", " + std::to_string(weights_[3]) + ")");
    }
  }
}

at::Tensor Box2BoxTransform::get_deltas(const at::Tensor& src_boxes,
                                        const at::Tensor& target_boxes) const {
  check_boxes(src_boxes, "src_boxes");
  check_boxes(target_boxes, "target_boxes");
  TORCH_CHECK(src_boxes.size(0) == target_boxes.size(0),
              "Box2BoxTransform: src_boxes and target_boxes differ in length: ", src_boxes.size(0),
              " vs ", target_boxes.size(0));
  const Geometry src = geometry(src_boxes);
  const Geometry target = geometry(target_boxes);
  TORCH_CHECK((src.widths > 0).all().item<bool>(),
              "Input boxes to Box2BoxTransform are not valid: a src box has width <= 0");
  const auto [wx, wy, ww, wh] = weights_;
  const at::Tensor dx = wx * (target.ctr_x - src.ctr_x) / src.widths;
  const at::Tensor dy = wy * (target.ctr_y - src.ctr_y) / src.heights;
  const at::Tensor dw = ww * at::log(target.widths / src.widths);
  const at::Tensor dh = wh * at::log(target.heights / src.heights);
  return at::stack({dx, dy, dw, dh}, 1);
}

at::Tensor Box2BoxTransform::apply_deltas(const at::Tensor& deltas_in,
                                          const at::Tensor& boxes_in) const {
  TORCH_CHECK(deltas_in.dim() == 2 && deltas_in.size(1) % 4 == 0 && deltas_in.size(1) > 0,
              "Box2BoxTransform: deltas must be (R, k * 4), got ", deltas_in.sizes());
  check_boxes(boxes_in, "boxes");
  TORCH_CHECK(deltas_in.size(0) == boxes_in.size(0), "Box2BoxTransform: ", deltas_in.size(0),
              " rows of deltas for ", boxes_in.size(0), " boxes");
  const at::Tensor deltas = deltas_in.to(at::kFloat);  // decode in fp32, as Detectron2
  const Geometry box = geometry(boxes_in.to(at::kFloat));

  const auto [wx, wy, ww, wh] = weights_;
  const int64_t step = 4;
  const at::Tensor dx = deltas.slice(1, 0, c10::nullopt, step) / wx;
  const at::Tensor dy = deltas.slice(1, 1, c10::nullopt, step) / wy;
  // Clamped so that exp() stays finite for wild predictions.
  const at::Tensor dw = at::clamp_max(deltas.slice(1, 2, c10::nullopt, step) / ww, scale_clamp_);
  const at::Tensor dh = at::clamp_max(deltas.slice(1, 3, c10::nullopt, step) / wh, scale_clamp_);

  // Each (R, k).
  const at::Tensor pred_ctr_x = dx * box.widths.unsqueeze(1) + box.ctr_x.unsqueeze(1);
  const at::Tensor pred_ctr_y = dy * box.heights.unsqueeze(1) + box.ctr_y.unsqueeze(1);
  const at::Tensor pred_w = at::exp(dw) * box.widths.unsqueeze(1);
  const at::Tensor pred_h = at::exp(dh) * box.heights.unsqueeze(1);

  const at::Tensor x1 = pred_ctr_x - 0.5 * pred_w;
  const at::Tensor y1 = pred_ctr_y - 0.5 * pred_h;
  const at::Tensor x2 = pred_ctr_x + 0.5 * pred_w;
  const at::Tensor y2 = pred_ctr_y + 0.5 * pred_h;
  return at::stack({x1, y1, x2, y2}, -1).reshape(deltas.sizes());
}

std::array<double, 4> box_reg_weights_from_config(const config::CfgNode& cfg,
                                                  const std::string& key) {
  auto w = cfg.get_float_list(key);
  if (w.size() != 4)
    throw Error(key + " must have 4 values (wx, wy, ww, wh), got " + std::to_string(w.size()));
  return {w[0], w[1], w[2], w[3]};
}

}  // namespace detkit::modeling
