// The dense-detector losses against values worked out by hand from their definitions (fvcore's
// giou_loss and sigmoid_focal_loss); RetinaNet's parity test checks them against Detectron2.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "detkit/layers/losses.h"

namespace detkit::layers {
namespace {

TEST(GIoULoss, MatchesTheDefinition) {
  // Identical boxes: IoU 1, enclosing box = union: loss 0.
  const at::Tensor a = at::tensor({0.f, 0.f, 2.f, 2.f}).reshape({1, 4});
  EXPECT_NEAR(giou_loss_sum(a, a).item<double>(), 0.0, 1e-6);
  // Half-overlapping: intersection 2, union 6, IoU 1/3, enclosing 3x2 = 6: loss 2/3.
  const at::Tensor b = at::tensor({1.f, 0.f, 3.f, 2.f}).reshape({1, 4});
  EXPECT_NEAR(giou_loss_sum(a, b).item<double>(), 1.0 - 1.0 / 3.0, 1e-6);
  // Disjoint: IoU 0, union 8, enclosing 4x4 = 16: GIoU = -(16 - 8) / 16, loss 1.5.
  const at::Tensor c = at::tensor({2.f, 2.f, 4.f, 4.f}).reshape({1, 4});
  EXPECT_NEAR(giou_loss_sum(a, c).item<double>(), 1.5, 1e-6);
  // Summed over rows.
  EXPECT_NEAR(giou_loss_sum(at::cat({a, a}), at::cat({b, c})).item<double>(), 2.0 / 3.0 + 1.5,
              1e-6);
}

TEST(SigmoidFocalLoss, MatchesTheDefinition) {
  const double x = 0.7, alpha = 0.25, gamma = 2.0;
  const double p = 1.0 / (1.0 + std::exp(-x));
  // target 1: -alpha (1 - p)^gamma log p; target 0: -(1 - alpha) p^gamma log(1 - p)
  const double positive = -alpha * std::pow(1 - p, gamma) * std::log(p);
  const double negative = -(1 - alpha) * std::pow(p, gamma) * std::log(1 - p);
  const at::Tensor logits = at::full({2}, x);
  const at::Tensor targets = at::tensor({1.f, 0.f});
  EXPECT_NEAR(sigmoid_focal_loss_sum(logits, targets, alpha, gamma).item<double>(),
              positive + negative, 1e-6);
  // alpha < 0: no weighting; gamma 0: plain binary cross-entropy.
  EXPECT_NEAR(sigmoid_focal_loss_sum(logits, targets, -1, 0).item<double>(),
              -std::log(p) - std::log(1 - p), 1e-6);
}

}  // namespace
}  // namespace detkit::layers
