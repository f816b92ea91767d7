#include "detkit/layers/losses.h"

#include <ATen/ATen.h>

#include <cmath>
#include <utility>
#include <vector>

#include "detkit/utils/error.h"

namespace detkit::layers {

at::Tensor smooth_l1_loss_sum(const at::Tensor& input, const at::Tensor& target, double beta) {
  at::Tensor n = (input - target).abs();
  if (beta < 1e-5) return n.sum();
  return at::where(n < beta, 0.5 * n * n / beta, n - 0.5 * beta).sum();
}

namespace {

constexpr double kEps = 1e-7;

// The intersection and union areas of paired XYXY boxes, as fvcore and Detectron2 compute them.
std::pair<at::Tensor, at::Tensor> intersection_and_union(const std::vector<at::Tensor>& b,
                                                          const std::vector<at::Tensor>& t) {
  const at::Tensor xi1 = at::max(b[0], t[0]), yi1 = at::max(b[1], t[1]);
  const at::Tensor xi2 = at::min(b[2], t[2]), yi2 = at::min(b[3], t[3]);
  const at::Tensor overlap = (yi2 > yi1) & (xi2 > xi1);
  const at::Tensor intersection =
      at::where(overlap, (xi2 - xi1) * (yi2 - yi1), at::zeros_like(xi1));
  return {intersection,
          (b[2] - b[0]) * (b[3] - b[1]) + (t[2] - t[0]) * (t[3] - t[1]) - intersection};
}

}  // namespace

at::Tensor giou_loss_sum(const at::Tensor& boxes, const at::Tensor& targets) {
  const auto b = boxes.unbind(-1), t = targets.unbind(-1);
  const auto [intersection, unions] = intersection_and_union(b, t);
  const at::Tensor iou = intersection / (unions + kEps);
  const at::Tensor enclosing =
      (at::max(b[2], t[2]) - at::min(b[0], t[0])) * (at::max(b[3], t[3]) - at::min(b[1], t[1]));
  return (1 - (iou - (enclosing - unions) / (enclosing + kEps))).sum();
}

namespace {

// What DIoU and CIoU share: the IoU and the centre-distance penalty, as Detectron2 computes them.
struct DistanceTerms {
  at::Tensor iou, penalty;
};

DistanceTerms distance_terms(const char* loss, const at::Tensor& boxes, const at::Tensor& targets) {
  const auto b = boxes.unbind(-1), t = targets.unbind(-1);
  if (boxes.numel() > 0 && ((b[2] < b[0]).any().item<bool>() || (b[3] < b[1]).any().item<bool>()))
    throw Error(std::string(loss) + ": a predicted box has x1 > x2 or y1 > y2 (bad box)");
  const auto [intersection, areas_union] = intersection_and_union(b, t);
  const at::Tensor unions = areas_union + kEps;
  const at::Tensor xc1 = at::min(b[0], t[0]), yc1 = at::min(b[1], t[1]);
  const at::Tensor xc2 = at::max(b[2], t[2]), yc2 = at::max(b[3], t[3]);
  const at::Tensor diagonal = at::pow(xc2 - xc1, 2) + at::pow(yc2 - yc1, 2) + kEps;
  const at::Tensor x_p = (b[2] + b[0]) / 2, y_p = (b[3] + b[1]) / 2;
  const at::Tensor x_t = (t[0] + t[2]) / 2, y_t = (t[1] + t[3]) / 2;
  const at::Tensor distance = at::pow(x_p - x_t, 2) + at::pow(y_p - y_t, 2);
  return {intersection / unions, distance / diagonal};
}

}  // namespace

at::Tensor diou_loss_sum(const at::Tensor& boxes, const at::Tensor& targets) {
  const DistanceTerms d = distance_terms("diou_loss", boxes, targets);
  return (1 - d.iou + d.penalty).sum();
}

at::Tensor ciou_loss_sum(const at::Tensor& boxes, const at::Tensor& targets) {
  const DistanceTerms d = distance_terms("ciou_loss", boxes, targets);
  const auto b = boxes.unbind(-1), t = targets.unbind(-1);
  const at::Tensor w = b[2] - b[0], h = b[3] - b[1];
  const at::Tensor w_t = t[2] - t[0], h_t = t[3] - t[1];
  const at::Tensor v = (4 / (M_PI * M_PI)) * at::pow(at::atan(w_t / h_t) - at::atan(w / h), 2);
  const at::Tensor alpha = (v / (1 - d.iou + v + kEps)).detach();
  return (1 - d.iou + d.penalty + alpha * v).sum();
}

bool is_box_reg_loss_type(const std::string& type) {
  return type == "smooth_l1" || type == "giou" || type == "diou" || type == "ciou";
}

at::Tensor iou_box_reg_loss_sum(const std::string& type, const at::Tensor& boxes,
                                const at::Tensor& targets) {
  if (type == "giou") return giou_loss_sum(boxes, targets);
  if (type == "diou") return diou_loss_sum(boxes, targets);
  if (type == "ciou") return ciou_loss_sum(boxes, targets);
  throw Error("invalid IoU box regression loss type '" + type + "' (giou, diou or ciou)");
}

at::Tensor sigmoid_focal_loss_sum(const at::Tensor& logits, const at::Tensor& targets, double alpha,
                                  double gamma) {
  const at::Tensor x = logits.to(at::kFloat), t = targets.to(at::kFloat);
  const at::Tensor p = at::sigmoid(x);
  const at::Tensor ce = at::binary_cross_entropy_with_logits(x, t, {}, {}, at::Reduction::None);
  const at::Tensor p_t = p * t + (1 - p) * (1 - t);
  at::Tensor loss = ce * (1 - p_t).pow(gamma);
  if (alpha >= 0) loss = (alpha * t + (1 - alpha) * (1 - t)) * loss;
  return loss.sum();
}

}  // namespace detkit::layers
