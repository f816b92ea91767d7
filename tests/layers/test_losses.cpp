// The dense-detector losses against values worked out by hand from their definitions (fvcore's
// giou_loss and sigmoid_focal_loss); RetinaNet's parity test checks them against Detectron2. The
// IoU box-regression losses (GIoU, DIoU, CIoU) and their gradients against torchvision's, whose
// formulas are Detectron2's, on random and degenerate boxes.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "detkit/layers/losses.h"
#include "tests/parity/oracle.h"
#include "tests/support/error_of.h"
#include "tests/support/tensor_compare.h"

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

// Per-row boxes: random ones (overlapping, disjoint, nested) and the degenerate rows Detectron2's
// formulas meet: identical boxes, zero width or height on either side, a point target.
std::pair<at::Tensor, at::Tensor> loss_cases() {
  at::manual_seed(3);
  auto random_boxes = [](int64_t n) {
    const at::Tensor xy = at::rand({n, 2}, at::kDouble) * 60;
    const at::Tensor wh = at::rand({n, 2}, at::kDouble) * 40;
    return at::cat({xy, xy + wh}, 1);
  };
  at::Tensor boxes = random_boxes(300), targets = random_boxes(300);
  const at::Tensor special_boxes = at::tensor({0.,  0.,  10., 10.,   // identical
                                               0.,  0.,  10., 10.,   // nested inside the target
                                               50., 50., 60., 70.,   // disjoint
                                               5.,  5.,  5.,  15.,   // zero width
                                               5.,  5.,  15., 5.,    // zero height
                                               0.,  0.,  10., 10.},  // against a zero-height target
                                              at::kDouble)
                                       .reshape({-1, 4});
  const at::Tensor special_targets = at::tensor({0.,  0.,  10., 10.,  //
                                                 -5., -5., 20., 20.,  //
                                                 0.,  0.,  10., 10.,  //
                                                 0.,  0.,  10., 10.,  //
                                                 0.,  0.,  10., 10.,  //
                                                 2.,  3.,  8.,  3.},
                                                at::kDouble)
                                         .reshape({-1, 4});
  return {at::cat({boxes, special_boxes}), at::cat({targets, special_targets})};
}

TEST(IoULosses, EqualTorchvisionsWhichAreDetectron2sFormulasWithGradients) {
  if (testing::oracle_python().empty()) GTEST_SKIP() << "no python3 with torchvision (the oracle)";
  const auto [boxes, targets] = loss_cases();
  const auto want = testing::run_oracle("oracle_ops.py", "box_iou_losses",
                                        {{"boxes", boxes}, {"targets", targets}});
  for (const std::string type : {"giou", "diou", "ciou"}) {
    const at::Tensor x = boxes.clone().requires_grad_(true);
    const at::Tensor loss = iou_box_reg_loss_sum(type, x, targets);
    loss.backward();
    const at::Tensor want_loss = want.at(type).sum(), want_grad = want.at(type + "_grad");
    // Zero-height boxes give atan(w / 0) and infinite slopes: NaN gradients there, in both.
    const at::Tensor both_nan = x.grad().isnan() & want_grad.isnan();
    EXPECT_TRUE(at::equal(x.grad().isnan(), want_grad.isnan())) << type << ": NaN gradients differ";
    const double loss_diff = std::fabs(loss.item<double>() - want_loss.item<double>());
    const double grad_diff = testing::max_abs_diff(x.grad().masked_fill(both_nan, 0),
                                                   want_grad.masked_fill(both_nan, 0));
    std::cout << type << " on " << boxes.size(0) << " box pairs (float64): loss "
              << loss.item<double>() << ", largest difference " << loss_diff << " (loss), "
              << grad_diff
              << " (gradient); rows with NaN gradients: " << both_nan.any(1).sum().item<int64_t>()
              << "\n";
    EXPECT_LE(loss_diff, 1e-9 * std::max(1.0, std::fabs(want_loss.item<double>()))) << type;
    EXPECT_LE(grad_diff, 1e-12) << type;
  }
}

TEST(IoULosses, DegenerateRowsMatchTheDefinitions) {
  const at::Tensor a = at::tensor({0., 0., 10., 10.}, at::kDouble).reshape({1, 4});
  // Identical boxes: IoU = 100 / (100 + eps), no centre distance, equal aspect: loss ~1e-9.
  for (const std::string type : {"giou", "diou", "ciou"})
    EXPECT_NEAR(iou_box_reg_loss_sum(type, a, a).item<double>(), 0.0, 1e-8) << type;
  // Disjoint boxes with centres 50 apart (x) and enclosing diagonal^2 = 60^2 + 10^2: DIoU = 1 +
  // 2500 / 3700; same aspect ratio, so CIoU = DIoU.
  const at::Tensor b = at::tensor({50., 0., 60., 10.}, at::kDouble).reshape({1, 4});
  EXPECT_NEAR(diou_loss_sum(b, a).item<double>(), 1.0 + 2500.0 / 3700.0, 1e-9);
  EXPECT_NEAR(ciou_loss_sum(b, a).item<double>(), 1.0 + 2500.0 / 3700.0, 1e-9);
  // A point against a point: 0 / 0 aspect ratios, NaN as in Detectron2.
  const at::Tensor point = at::tensor({5., 5., 5., 5.}, at::kDouble).reshape({1, 4});
  EXPECT_TRUE(std::isnan(ciou_loss_sum(point, point).item<double>()));
  // A box with x1 > x2 is refused, as Detectron2's assertion does.
  const at::Tensor flipped = at::tensor({10., 0., 0., 10.}, at::kDouble).reshape({1, 4});
  testing::expect_contains(testing::error_of([&] { diou_loss_sum(flipped, a); }),
                           "diou_loss: a predicted box has x1 > x2 or y1 > y2");
  testing::expect_contains(testing::error_of([&] { iou_box_reg_loss_sum("l2", a, a); }),
                           "invalid IoU box regression loss type 'l2'");
  // Empty inputs sum to zero.
  EXPECT_EQ(ciou_loss_sum(a.slice(0, 0, 0), a.slice(0, 0, 0)).item<double>(), 0.0);
}

}  // namespace
}  // namespace detkit::layers
