// Autocast rules of detkit's ops: under autocast a bfloat16 feature map meets fp32 boxes in
// every op, each computes in fp32 (the result equals the fp32 op on the same values), roi_align
// returns its input's dtype, and gradients flow back through the casts.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "detkit/ops/batched_nms.h"
#include "detkit/ops/box_iou.h"
#include "detkit/ops/deform_conv.h"
#include "detkit/ops/nms.h"
#include "detkit/ops/paste_masks.h"
#include "detkit/ops/roi_align.h"
#include "detkit/utils/autocast.h"

namespace detkit::ops {
namespace {

at::Tensor random_boxes_up_to(int64_t n, double size) {
  at::Tensor xy = torch::rand({n, 2}) * size * 0.6;
  at::Tensor wh = torch::rand({n, 2}) * size * 0.4 + 1;
  return torch::cat({xy, xy + wh}, 1);
}

TEST(AutocastRules, RoiAlignComputesInFp32AndReturnsItsInputsDtype) {
  torch::manual_seed(0);
  const at::Tensor map = torch::randn({2, 4, 16, 16}).to(at::kBFloat16);
  at::Tensor rois = torch::cat(
      {torch::tensor({0, 1, 1, 0}).unsqueeze(1).to(at::kFloat), random_boxes_up_to(4, 64)}, 1);
  at::Tensor x = map.clone().requires_grad_(true);
  at::Tensor y;
  {
    const AutocastGuard autocast(true);
    y = roi_align(x, rois, 0.25, 7, 7, 0, true);
  }
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  at::Tensor x32 = map.to(at::kFloat).requires_grad_(true);
  const at::Tensor want = roi_align(x32, rois, 0.25, 7, 7, 0, true).to(at::kBFloat16);
  EXPECT_TRUE(y.equal(want)) << "max diff " << (y - want).abs().max().item<float>();
  const at::Tensor go = torch::randn(y.sizes()).to(at::kBFloat16);
  y.backward(go);
  want.backward(go);
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().scalar_type(), at::kBFloat16);
  EXPECT_TRUE(x.grad().equal(x32.grad().to(at::kBFloat16)));
}

TEST(AutocastRules, MultilevelRoiAlignComputesInFp32AndReturnsTheMapsDtype) {
  torch::manual_seed(3);
  std::vector<at::Tensor> maps16, maps32;
  for (int64_t side : {16, 8}) {
    const at::Tensor m = torch::randn({2, 4, side, side}).to(at::kBFloat16);
    maps16.push_back(m.clone().requires_grad_(true));
    maps32.push_back(m.to(at::kFloat).requires_grad_(true));
  }
  const at::Tensor rois = torch::cat(
      {torch::tensor({0, 1, 1, 0}).unsqueeze(1).to(at::kFloat), random_boxes_up_to(4, 64)}, 1);
  const at::Tensor levels = torch::tensor({0, 1, 1, 0}, at::kLong);
  at::Tensor y;
  {
    const AutocastGuard autocast(true);
    y = multilevel_roi_align(maps16, rois, levels, {0.25, 0.125}, 7, 7, 0, true);
  }
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  const at::Tensor want =
      multilevel_roi_align(maps32, rois, levels, {0.25, 0.125}, 7, 7, 0, true).to(at::kBFloat16);
  EXPECT_TRUE(y.equal(want));
  const at::Tensor go = torch::randn(y.sizes()).to(at::kBFloat16);
  y.backward(go);
  want.backward(go);
  for (size_t l = 0; l < maps16.size(); ++l) {
    ASSERT_TRUE(maps16[l].grad().defined()) << "level " << l;
    EXPECT_EQ(maps16[l].grad().scalar_type(), at::kBFloat16);
    EXPECT_TRUE(maps16[l].grad().equal(maps32[l].grad().to(at::kBFloat16))) << "level " << l;
  }
}

TEST(AutocastRules, DeformConv2dComputesInFp32AndReturnsItsInputsDtype) {
  torch::manual_seed(0);
  const at::Tensor map = torch::randn({1, 4, 8, 8}).to(at::kBFloat16);
  const at::Tensor weight = torch::randn({3, 4, 3, 3}), bias = torch::randn({3});
  const at::Tensor offset = torch::randn({1, 18, 8, 8}), mask = torch::rand({1, 9, 8, 8});
  at::Tensor x = map.clone().requires_grad_(true);
  at::Tensor y;
  {
    const AutocastGuard autocast(true);
    y = deform_conv2d(x, weight, offset, mask, bias, 1, 1, 1, 1, 1, 1, 1, 1);
  }
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  const at::Tensor want =
      deform_conv2d(map.to(at::kFloat), weight, offset, mask, bias, 1, 1, 1, 1, 1, 1, 1, 1)
          .to(at::kBFloat16);
  EXPECT_TRUE(y.equal(want)) << "max diff " << (y - want).abs().max().item<float>();
  y.sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().scalar_type(), at::kBFloat16);
}

TEST(AutocastRules, NmsOpsTakeBfloat16ScoresWithFp32Boxes) {
  torch::manual_seed(1);
  const at::Tensor boxes = random_boxes_up_to(50, 100);
  const at::Tensor scores = torch::rand({50}).to(at::kBFloat16);
  const at::Tensor idxs = torch::randint(0, 3, {50}, at::kLong);
  at::Tensor kept, kept_batched, iou;
  {
    const AutocastGuard autocast(true);
    kept = nms(boxes, scores, 0.5);
    kept_batched = batched_nms(boxes.to(at::kBFloat16), scores, idxs, 0.5);
    iou = box_iou(boxes, boxes.to(at::kBFloat16));
  }
  EXPECT_TRUE(kept.equal(nms(boxes, scores.to(at::kFloat), 0.5)));
  const at::Tensor b16 = boxes.to(at::kBFloat16).to(at::kFloat);
  EXPECT_TRUE(kept_batched.equal(batched_nms(b16, scores.to(at::kFloat), idxs, 0.5)));
  EXPECT_EQ(iou.scalar_type(), at::kFloat);
  EXPECT_TRUE(iou.equal(box_iou(boxes, b16)));
}

TEST(AutocastRules, PasteMasksTakesBfloat16Masks) {
  torch::manual_seed(2);
  const at::Tensor masks = torch::rand({3, 28, 28}).to(at::kBFloat16);
  const at::Tensor boxes = random_boxes_up_to(3, 60);
  at::Tensor pasted;
  {
    const AutocastGuard autocast(true);
    pasted = paste_masks_in_image(masks, boxes, 64, 64, 0.5);
  }
  EXPECT_TRUE(pasted.equal(paste_masks_in_image(masks.to(at::kFloat), boxes, 64, 64, 0.5)));
}

TEST(AutocastRules, GroupNormRunsInFp32OnABfloat16Input) {
  // libtorch 1.13's CPU kernel refuses bfloat16 input with fp32 weights; the rule upcasts.
  torch::manual_seed(3);
  const at::Tensor x = torch::randn({2, 8, 5, 5}).to(at::kBFloat16);
  at::Tensor w = torch::randn({8}, torch::requires_grad()), b = torch::randn({8}, torch::requires_grad());
  at::Tensor y;
  {
    const AutocastGuard autocast(true);
    y = at::group_norm(x, 4, w, b, 1e-5);
  }
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  EXPECT_TRUE(y.equal(at::group_norm(x.to(at::kFloat), 4, w, b, 1e-5)));
  y.sum().backward();
  EXPECT_EQ(w.grad().scalar_type(), at::kFloat);
  EXPECT_TRUE(b.grad().defined());
}

TEST(AutocastRules, DoubleInputsStayDouble) {
  const at::Tensor map = torch::randn({1, 2, 8, 8}, at::kDouble);
  const at::Tensor rois = torch::tensor({{0.0, 1.0, 1.0, 20.0, 20.0}}, at::kDouble);
  const AutocastGuard autocast(true);
  EXPECT_EQ(roi_align(map, rois, 0.25, 2, 2, 2, true).scalar_type(), at::kDouble);
}

}  // namespace
}  // namespace detkit::ops
