// The mask loss's targets from either mask format (INPUT.MASK_FORMAT): BitMasks are sampled in
// each proposal box as Detectron2's BitMasks.crop_and_resize samples them (ROIAlign, aligned,
// thresholded at 0.5); a box that holds only mask pixels gives all-foreground targets, a box
// outside the mask all-background ones; the same rectangles as polygons give the same loss; a
// gt_masks of another type is an error naming the field.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <iostream>

#include "detkit/modeling/roi_heads/mask_head.h"
#include "detkit/structures/boxes.h"
#include "detkit/structures/instances.h"
#include "detkit/structures/masks.h"

namespace detkit::modeling {
namespace {

using structures::BitMasks;
using structures::Boxes;
using structures::Instances;
using structures::PolygonMasks;

// Two proposals of one image (64 x 48), class 0 and 1, over two rectangles of GT.
Instances proposals(bool bitmasks) {
  Instances inst(48, 64);
  inst.set("proposal_boxes",
           Boxes(at::tensor({8.f, 8.f, 24.f, 24.f, 30.f, 4.f, 60.f, 40.f}).reshape({2, 4})));
  inst.set("gt_classes", at::tensor({0, 1}, at::kLong));
  if (bitmasks) {
    at::Tensor masks = at::zeros({2, 48, 64}, at::kBool);
    masks[0].slice(0, 8, 24).slice(1, 8, 24).fill_(true);
    masks[1].slice(0, 10, 30).slice(1, 36, 54).fill_(true);
    inst.set("gt_masks", BitMasks(masks));
  } else {
    inst.set("gt_masks",
             PolygonMasks({{{8, 8, 24, 8, 24, 24, 8, 24}}, {{36, 10, 54, 10, 54, 30, 36, 30}}}));
  }
  return inst;
}

TEST(MaskLossTargets, BitMasksTrainAsThePolygonsOfTheSameRectangles) {
  at::manual_seed(0);
  const at::Tensor logits = at::randn({2, 2, 28, 28});
  const double from_bits = mask_rcnn_loss(logits, {proposals(true)}).item<double>();
  const double from_polygons = mask_rcnn_loss(logits, {proposals(false)}).item<double>();
  std::cout << "[ mask targets ] loss from BitMasks " << from_bits << ", from polygons "
            << from_polygons << "\n";
  EXPECT_NEAR(from_bits, from_polygons, 0.01 * from_polygons);
  // The first proposal's box is its mask's rectangle: every target is foreground, so confident
  // foreground logits cost nothing.
  const at::Tensor sure = at::full({1, 2, 28, 28}, 20.0);
  const at::Tensor loss = mask_rcnn_loss(sure, {proposals(true).index(at::tensor({0}, at::kLong))});
  EXPECT_LT(loss.item<double>(), 1e-6) << "a box inside the mask: every target is foreground";
}

TEST(MaskLossTargets, ABoxOutsideTheMaskHasOnlyBackground) {
  Instances inst(48, 64);
  inst.set("proposal_boxes", Boxes(at::tensor({40.f, 30.f, 60.f, 46.f}).reshape({1, 4})));
  inst.set("gt_classes", at::tensor({0}, at::kLong));
  at::Tensor masks = at::zeros({1, 48, 64}, at::kBool);
  masks[0].slice(0, 0, 20).slice(1, 0, 20).fill_(true);
  inst.set("gt_masks", BitMasks(masks));
  const at::Tensor loss = mask_rcnn_loss(at::full({1, 1, 28, 28}, -20.0), {inst});
  EXPECT_LT(loss.item<double>(), 1e-6);
}

TEST(MaskLossTargets, AnotherFieldTypeIsNamed) {
  Instances inst(48, 64);
  inst.set("proposal_boxes", Boxes(at::tensor({0.f, 0.f, 10.f, 10.f}).reshape({1, 4})));
  inst.set("gt_classes", at::tensor({0}, at::kLong));
  inst.set("gt_masks", at::zeros({1, 48, 64}));
  try {
    mask_rcnn_loss(at::zeros({1, 1, 28, 28}), {inst});
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("gt_masks must be PolygonMasks or BitMasks"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace detkit::modeling
