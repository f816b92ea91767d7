#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "tests/support/bools.h"

#include "detkit/structures/masks.h"

namespace detkit::structures {
using testing::bools;

TEST(PolygonMasks, AreaBoxesScaleIndex) {
  // A 4x3 rectangle and a right triangle of legs 2 (area 2) in one instance; an empty one.
  PolygonMasks masks({{{0, 0, 4, 0, 4, 3, 0, 3}, {10, 10, 12, 10, 10, 12}}, {}});
  EXPECT_TRUE(masks.area().equal(at::tensor({14.f, 0.f})));
  EXPECT_TRUE(masks.get_bounding_boxes().tensor()[0].equal(at::tensor({0.f, 0.f, 12.f, 12.f})));
  EXPECT_TRUE(masks.get_bounding_boxes().tensor()[1].equal(at::zeros({4})));
  EXPECT_TRUE(masks.nonempty().equal(bools({1, 0})));
  masks.scale(0.5, 2.0);
  EXPECT_EQ(masks.polygons()[0][0][2], 2.0);
  EXPECT_EQ(masks.polygons()[0][0][5], 6.0);
  EXPECT_EQ(masks.index(at::tensor({1}, at::kLong)).polygons()[0].size(), 0u);
  EXPECT_THROW(masks.index(at::tensor({2}, at::kLong)), c10::Error);
  EXPECT_EQ(PolygonMasks::cat({masks, masks}).size(), 4);
}

TEST(PolygonMasks, RefusesMalformedPolygons) {
  EXPECT_THROW(PolygonMasks({{{0, 0, 1, 1}}}), c10::Error);       // 2 points
  EXPECT_THROW(PolygonMasks({{{0, 0, 1, 1, 2}}}), c10::Error);    // odd count
}

TEST(BitMasks, FromPolygonsAreaAndBoxes) {
  // pycocotools rasterises the square [1,1]-[4,4] as pixels 1..3 in x and y (9 pixels).
  PolygonMasks polys({{{1, 1, 4, 1, 4, 4, 1, 4}}, {}});
  BitMasks bits = polys.to_bitmasks(6, 8);
  EXPECT_EQ(bits.tensor().sizes(), (at::IntArrayRef{2, 6, 8}));
  EXPECT_EQ(bits.area()[0].item<int64_t>(), 9);
  EXPECT_EQ(bits.area()[1].item<int64_t>(), 0);
  EXPECT_TRUE(bits.get_bounding_boxes().tensor()[0].equal(at::tensor({1.f, 1.f, 4.f, 4.f})));
  EXPECT_TRUE(bits.get_bounding_boxes().tensor()[1].equal(at::zeros({4})));
  EXPECT_TRUE(bits.nonempty().equal(bools({1, 0})));
  EXPECT_EQ(bits.index(bools({1, 0})).size(), 1);
  EXPECT_EQ(BitMasks::cat({bits, bits}).size(), 4);
  EXPECT_THROW(BitMasks(at::zeros({4, 4})), c10::Error);
}

TEST(BitMasks, NonemptyFindsAPixelAnywhereAsAnyDoes) {
  // One pixel on at the first byte, at the last, in the middle, none; the contiguous scan and
  // libtorch's any() (which a non-contiguous view still takes) agree.
  at::Tensor masks = at::zeros({5, 7, 9}, at::kBool);
  masks[0][0][0] = true;
  masks[1][6][8] = true;
  masks[2][3][4] = true;
  masks[4].fill_(true);
  const at::Tensor expected = bools({1, 1, 1, 0, 1});
  EXPECT_TRUE(BitMasks(masks).nonempty().equal(expected));
  EXPECT_TRUE(BitMasks(masks).nonempty().equal(masks.flatten(1).any(1)));
  const at::Tensor transposed = masks.transpose(1, 2);
  ASSERT_FALSE(transposed.is_contiguous());
  EXPECT_TRUE(BitMasks(transposed).nonempty().equal(expected));
  EXPECT_EQ(BitMasks(at::zeros({0, 7, 9}, at::kBool)).nonempty().numel(), 0);
  EXPECT_EQ(BitMasks(at::zeros({2, 0, 9}, at::kBool)).nonempty().sum().item<int64_t>(), 0);
}

TEST(BitMasks, EmptyPolygonMasks) {
  BitMasks bits = PolygonMasks().to_bitmasks(3, 5);
  EXPECT_EQ(bits.tensor().sizes(), (at::IntArrayRef{0, 3, 5}));
}

}  // namespace detkit::structures
