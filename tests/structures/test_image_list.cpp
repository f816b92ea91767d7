#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "detkit/structures/image_list.h"

namespace detkit::structures {

TEST(ImageList, PadsToDivisibleSizeAndKeepsTrueSizes) {
  at::Tensor a = at::ones({3, 100, 70});
  at::Tensor b = at::full({3, 60, 130}, 2.0);
  ImageList list = ImageList::from_tensors({a, b}, 32);
  EXPECT_EQ(list.tensor().sizes(), (at::IntArrayRef{2, 3, 128, 160}));
  EXPECT_EQ(list.image_sizes()[0], std::make_pair(int64_t{100}, int64_t{70}));
  EXPECT_EQ(list.image_sizes()[1], std::make_pair(int64_t{60}, int64_t{130}));
  EXPECT_TRUE(list[0].equal(a));
  EXPECT_TRUE(list[1].equal(b));
  // Padding is zero, bottom and right only.
  EXPECT_EQ(list.tensor()[0].sum().item<float>(), a.sum().item<float>());
  EXPECT_EQ(list.tensor()[1].sum().item<float>(), b.sum().item<float>());
}

TEST(ImageList, NoDivisibilityAndPadValue) {
  ImageList list = ImageList::from_tensors({at::zeros({1, 5, 7})}, 0, -1.0);
  EXPECT_EQ(list.tensor().sizes(), (at::IntArrayRef{1, 1, 5, 7}));
  ImageList padded = ImageList::from_tensors({at::zeros({1, 5, 7}), at::zeros({1, 6, 3})}, 1, -1.0);
  EXPECT_EQ(padded.tensor().sizes(), (at::IntArrayRef{2, 1, 6, 7}));
  EXPECT_EQ(padded.tensor()[1].sum().item<float>(), -(6 * 7 - 6 * 3));
}

// A minimum size (another rank's larger image in the same global batch) pads beyond the batch's
// own largest image, then divisibility rounds up; a smaller minimum changes nothing.
TEST(ImageList, PadsToAMinimumSizeBeforeRoundingUp) {
  const at::Tensor a = at::ones({3, 40, 50});
  EXPECT_EQ(ImageList::from_tensors({a}, 32, 0.0, {70, 60}).tensor().sizes(),
            (at::IntArrayRef{1, 3, 96, 64}));
  EXPECT_EQ(ImageList::from_tensors({a}, 32, 0.0, {10, 10}).tensor().sizes(),
            (at::IntArrayRef{1, 3, 64, 64}));
  const ImageList list = ImageList::from_tensors({a}, 0, 0.0, {41, 50});
  EXPECT_EQ(list.tensor().sizes(), (at::IntArrayRef{1, 3, 41, 50}));
  EXPECT_EQ(list.image_sizes()[0], std::make_pair(int64_t{40}, int64_t{50}));
}

TEST(ImageList, RefusesMismatchedImages) {
  EXPECT_THROW(ImageList::from_tensors({}), c10::Error);
  EXPECT_THROW(ImageList::from_tensors({at::zeros({3, 4, 4}), at::zeros({1, 4, 4})}), c10::Error);
  EXPECT_THROW(ImageList::from_tensors({at::zeros({4, 4})}), c10::Error);
  EXPECT_THROW(ImageList::from_tensors({at::zeros({3, 4, 4}), at::zeros({3, 4, 4}, at::kDouble)}),
               c10::Error);
}

}  // namespace detkit::structures
