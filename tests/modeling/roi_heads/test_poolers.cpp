// ROIPooler: each box is pooled from the level its size selects, the rows come back in box order
// (image by image), and no boxes give an empty (0, C, S, S) result.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include "detkit/modeling/roi_heads/poolers.h"
#include "detkit/ops/roi_align.h"

namespace detkit::modeling {
namespace {

ROIPoolerOptions four_levels() {
  ROIPoolerOptions o;
  o.output_size = 7;
  o.scales = {1.0 / 4, 1.0 / 8, 1.0 / 16, 1.0 / 32};
  o.sampling_ratio = 2;
  o.pooler_type = "ROIAlign";
  return o;
}

std::vector<at::Tensor> features(int64_t images, int64_t channels) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  std::vector<at::Tensor> out;
  for (int64_t stride : {4, 8, 16, 32})
    out.push_back(at::randn({images, channels, 256 / stride, 320 / stride}, gen));
  return out;
}

// Two images' boxes, sqrt(area) from 20 to 548 px: levels p2 to p5 (224 px at p4), not in level
// order.
std::vector<structures::Boxes> boxes_on_every_level() {
  return {
      structures::Boxes(at::tensor({10.f, 10.f, 30.f, 30.f, 0.f, 0.f, 300.f, 250.f, 50.f, 40.f,
                                    110.f, 100.f, 100.f, 60.f, 230.f, 190.f})
                            .view({4, 4})),
      structures::Boxes(at::tensor({5.f, 5.f, 45.f, 45.f, 0.f, 0.f, 600.f, 500.f}).view({2, 4}))};
}

TEST(ROIPooler, EachBoxComesFromItsLevelInBoxOrder) {
  const auto maps = features(2, 5);
  std::vector<structures::Boxes> boxes = boxes_on_every_level();
  const at::Tensor levels = assign_boxes_to_levels(boxes, 2, 5, 224, 4);
  ROIPooler pooler(four_levels());
  const at::Tensor pooled = pooler(maps, boxes);
  ASSERT_EQ(pooled.sizes(), at::IntArrayRef({6, 5, 7, 7}));
  int64_t row = 0;
  for (size_t image = 0; image < boxes.size(); ++image) {
    for (int64_t k = 0; k < boxes[image].tensor().size(0); ++k, ++row) {
      const int64_t level = levels[row].item<int64_t>();
      const at::Tensor roi =
          at::cat({at::full({1, 1}, double(image)), boxes[image].tensor().slice(0, k, k + 1)}, 1);
      const at::Tensor want =
          ops::roi_align(maps[level], roi, four_levels().scales[level], 7, 7, 2, false);
      EXPECT_TRUE(at::equal(pooled.slice(0, row, row + 1), want)) << "row " << row;
    }
  }
  EXPECT_EQ(levels.max().item<int64_t>(), 3);  // the boxes span several levels
  EXPECT_EQ(levels.min().item<int64_t>(), 0);
}

// Each level's feature gradient equals the one through roi_align of each of its boxes alone,
// summed over the boxes.
TEST(ROIPooler, GradientsReachEachLevelThroughItsOwnBoxes) {
  std::vector<at::Tensor> maps;
  for (const auto& m : features(2, 5)) maps.push_back(m.clone().requires_grad_(true));
  std::vector<structures::Boxes> boxes = boxes_on_every_level();
  const at::Tensor levels = assign_boxes_to_levels(boxes, 2, 5, 224, 4);
  const at::Tensor weights = at::randn({6, 5, 7, 7});
  (ROIPooler(four_levels())(maps, boxes) * weights).sum().backward();

  std::vector<at::Tensor> want;
  for (const auto& m : maps) want.push_back(at::zeros_like(m));
  int64_t row = 0;
  for (size_t image = 0; image < boxes.size(); ++image) {
    for (int64_t k = 0; k < boxes[image].tensor().size(0); ++k, ++row) {
      const int64_t level = levels[row].item<int64_t>();
      at::Tensor map = maps[level].detach().clone().requires_grad_(true);
      const at::Tensor roi =
          at::cat({at::full({1, 1}, double(image)), boxes[image].tensor().slice(0, k, k + 1)}, 1);
      (ops::roi_align(map, roi, four_levels().scales[level], 7, 7, 2, false) *
       weights.slice(0, row, row + 1))
          .sum()
          .backward();
      want[level] += map.grad();
    }
  }
  for (size_t level = 0; level < maps.size(); ++level) {
    ASSERT_TRUE(maps[level].grad().defined()) << "level " << level;
    EXPECT_TRUE(at::allclose(maps[level].grad(), want[level], 1e-5, 1e-6)) << "level " << level;
  }
}

TEST(ROIPooler, NoBoxesGiveAnEmptyResult) {
  const auto maps = features(2, 5);
  std::vector<structures::Boxes> boxes = {structures::Boxes(at::zeros({0, 4})),
                                          structures::Boxes(at::zeros({0, 4}))};
  const at::Tensor pooled = ROIPooler(four_levels())(maps, boxes);
  EXPECT_EQ(pooled.sizes(), at::IntArrayRef({0, 5, 7, 7}));
}

}  // namespace
}  // namespace detkit::modeling
