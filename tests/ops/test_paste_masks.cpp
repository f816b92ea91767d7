// detkit::ops::paste_masks_in_image: the kernel against Detectron2's algorithm written with
// libtorch's grid_sample, edge cases, and parity with the Python original (tests/parity).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "detkit/ops/paste_masks.h"
#include "tests/parity/oracle.h"

namespace detkit::ops {
namespace {

// Detectron2's paste_masks_in_image on CPU, one mask at a time, in libtorch: the soft values
// (N, H, W), zero outside each mask's pixel region.
at::Tensor reference_values(const at::Tensor& masks, const at::Tensor& boxes, int64_t h,
                            int64_t w) {
  at::Tensor values = at::zeros({masks.size(0), h, w});
  for (int64_t i = 0; i < masks.size(0); ++i) {
    const at::Tensor b = boxes[i];
    const float x0 = b[0].item<float>(), y0 = b[1].item<float>();
    const float x1 = b[2].item<float>(), y1 = b[3].item<float>();
    const int64_t x_begin = std::max(std::floor(x0) - 1, 0.f);
    const int64_t y_begin = std::max(std::floor(y0) - 1, 0.f);
    const int64_t x_end = std::min(std::ceil(x1) + 1, static_cast<float>(w));
    const int64_t y_end = std::min(std::ceil(y1) + 1, static_cast<float>(h));
    if (x_begin >= x_end || y_begin >= y_end) continue;
    const at::Tensor gx =
        (at::arange(x_begin, x_end, at::kFloat) + 0.5 - b[0]) / (b[2] - b[0]) * 2 - 1;
    const at::Tensor gy =
        (at::arange(y_begin, y_end, at::kFloat) + 0.5 - b[1]) / (b[3] - b[1]) * 2 - 1;
    const int64_t rows = y_end - y_begin, cols = x_end - x_begin;
    const at::Tensor grid =
        at::stack(
            {gx.view({1, cols}).expand({rows, cols}), gy.view({rows, 1}).expand({rows, cols})}, 2)
            .unsqueeze(0);
    const at::Tensor pasted =
        at::grid_sampler(masks[i].view({1, 1, masks.size(1), masks.size(2)}), grid, 0, 0, false);
    values[i].slice(0, y_begin, y_end).slice(1, x_begin, x_end).copy_(pasted[0][0]);
  }
  return values;
}

// Number of pixels where `got` differs from values >= threshold; fails the test for any that is
// not a tie (value within 1e-6 of the threshold).
int64_t differing_pixels(const at::Tensor& got, const at::Tensor& values, double threshold) {
  const at::Tensor differ = got.ne(values >= threshold);
  const int64_t count = differ.sum().item<int64_t>();
  if (count > 0) {
    const double worst = (values.masked_select(differ) - threshold).abs().max().item<double>();
    EXPECT_LE(worst, 1e-6) << count << " pixels differ away from the threshold";
  }
  return count;
}

// 28x28 probabilities, the last mask constant 0.5 (every pixel a threshold tie), and boxes that
// are inside, straddling the border, larger than the image, thinner than a pixel.
std::pair<at::Tensor, at::Tensor> inputs(int64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor masks = at::rand({9, 28, 28}, gen);
  masks[8].fill_(0.5f);
  const at::Tensor boxes =
      at::tensor({10.3f,  5.7f,  40.1f, 33.9f, -12.4f, 20.2f, 30.8f, 70.5f, 50.5f,
                  -8.25f, 95.2f, 18.6f, -20.f, -30.f,  130.f, 99.f,  33.3f, 44.4f,
                  33.8f,  44.6f, 60.f,  10.f,  61.f,   50.f,  0.f,   0.f,   79.9f,
                  59.9f,  2.5f,  2.5f,  9.5f,  9.5f,   15.2f, 12.7f, 56.9f, 48.3f})
          .view({9, 4});
  return {masks, boxes};
}

TEST(PasteMasks, MatchesDetectron2AlgorithmOnGridSample) {
  at::set_num_threads(4);
  const auto [masks, boxes] = inputs(1);
  const at::Tensor values = reference_values(masks, boxes, 60, 80);
  for (double threshold : {0.5, 0.3}) {
    const at::Tensor got = paste_masks_in_image(masks, boxes, 60, 80, threshold);
    ASSERT_EQ(got.sizes(), at::IntArrayRef({9, 60, 80}));
    ASSERT_EQ(got.scalar_type(), at::kBool);
    const int64_t count = differing_pixels(got, values, threshold);
    std::cout << "paste_masks vs grid_sample reference, threshold " << threshold << ": " << count
              << " of " << got.numel() << " pixels differ\n";
  }
}

TEST(PasteMasks, PastedValuesEqualGridSampleBitForBit) {
  // Thresholding at a pasted value v and at the next float above v reveals v exactly: the pixel
  // must be true at v and false just above it. (grid_sample rounds differently in its vectorised
  // and scalar builds; run with ATEN_CPU_CAPABILITY=default to check the scalar one.)
  const auto [masks, boxes] = inputs(4);
  const at::Tensor values = reference_values(masks, boxes, 60, 80);
  const at::Tensor candidates = at::nonzero((values > 0.05) & (values < 0.95));
  const int64_t step = std::max<int64_t>(1, candidates.size(0) / 300);
  int64_t checked = 0, wrong = 0;
  for (int64_t row = 0; row < candidates.size(0); row += step, ++checked) {
    const int64_t i = candidates[row][0].item<int64_t>(), y = candidates[row][1].item<int64_t>();
    const int64_t x = candidates[row][2].item<int64_t>();
    const float v = values[i][y][x].item<float>();
    const at::Tensor m = masks.slice(0, i, i + 1), b = boxes.slice(0, i, i + 1);
    const bool at_v = paste_masks_in_image(m, b, 60, 80, v)[0][y][x].item<bool>();
    const bool above_v =
        paste_masks_in_image(m, b, 60, 80, std::nextafter(v, 2.0f))[0][y][x].item<bool>();
    wrong += !at_v || above_v;
  }
  std::cout << "paste_masks values vs grid_sample: " << wrong << " of " << checked
            << " probed pixels differ in the last bit\n";
  EXPECT_GT(checked, 100);
  EXPECT_EQ(wrong, 0);
}

TEST(PasteMasks, EmptyInputAndOnePixelImage) {
  const at::Tensor none = paste_masks_in_image(at::zeros({0, 28, 28}), at::zeros({0, 4}), 5, 7);
  EXPECT_EQ(none.sizes(), at::IntArrayRef({0, 5, 7}));
  EXPECT_EQ(none.scalar_type(), at::kBool);
  const at::Tensor box = at::tensor({0.f, 0.f, 1.f, 1.f}).view({1, 4});
  EXPECT_TRUE(paste_masks_in_image(at::full({1, 28, 28}, 0.9f), box, 1, 1).item<bool>());
  EXPECT_FALSE(paste_masks_in_image(at::full({1, 28, 28}, 0.1f), box, 1, 1).item<bool>());
}

TEST(PasteMasks, BoxOutsideTheImageGivesAnEmptyMask) {
  const at::Tensor boxes =
      at::tensor({100.f, 5.f, 120.f, 20.f, -30.f, -20.f, -5.f, -2.f, 5.f, 5.f, 15.f, std::nanf("")})
          .view({3, 4});
  const at::Tensor got = paste_masks_in_image(at::ones({3, 28, 28}), boxes, 40, 50);
  EXPECT_FALSE(got.any().item<bool>());
}

TEST(PasteMasks, OnlyPixelsNearTheBoxAreSampled) {
  // Threshold 0 makes every sampled pixel true: exactly one pixel around the box, rounded out.
  const at::Tensor box = at::tensor({3.5f, 2.2f, 7.1f, 5.0f}).view({1, 4});
  const at::Tensor got = paste_masks_in_image(at::zeros({1, 28, 28}), box, 12, 12, 0.0)[0];
  const at::Tensor expected = at::zeros({12, 12}, at::kBool);
  expected.slice(0, 1, 6).slice(1, 2, 9).fill_(true);  // rows floor(2.2)-1..ceil(5)+1, cols 2..9
  EXPECT_TRUE(at::equal(got, expected));
}

TEST(PasteMasks, RejectsBadInput) {
  const at::Tensor box = at::tensor({0.f, 0.f, 4.f, 4.f}).view({1, 4});
  EXPECT_THROW(paste_masks_in_image(at::zeros({28, 28}), box, 8, 8), c10::Error);
  EXPECT_THROW(paste_masks_in_image(at::zeros({2, 28, 28}), box, 8, 8), c10::Error);
  EXPECT_THROW(paste_masks_in_image(at::zeros({1, 28, 28}), box, 8, 8, -1.0), c10::Error);
  EXPECT_THROW(paste_masks_in_image(at::zeros({1, 28, 28}), box, -8, 8), c10::Error);
}

TEST(PasteMasksParity, MatchesDetectron2PythonImplementation) {
  DETKIT_REQUIRE_ORACLE();
  at::set_num_threads(2);
  auto [masks, boxes] = inputs(2);
  // Plus many random boxes that overlap the image (Detectron2 fails on boxes entirely outside).
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  const at::Tensor xy = at::rand({40, 2}, gen) * at::tensor({90.f, 70.f}) - 10;
  const at::Tensor wh = at::rand({40, 2}, gen) * 50 + 10.3;
  boxes = at::cat({boxes, at::cat({xy, xy + wh}, 1)});
  masks = at::cat({masks, at::rand({40, 28, 28}, gen)});
  const double threshold = 0.5;
  const auto want = detkit::testing::run_oracle("oracle_ops.py", "paste_masks",
                                                {{"masks", masks},
                                                 {"boxes", boxes},
                                                 {"image_size", at::tensor({60, 80})},
                                                 {"threshold", at::tensor(threshold)}});
  const at::Tensor got = paste_masks_in_image(masks, boxes, 60, 80, threshold);
  EXPECT_TRUE(at::equal(want.at("masks"), want.at("values") >= threshold));
  const int64_t count = differing_pixels(got, want.at("values"), threshold);
  std::cout << "paste_masks vs Detectron2 (Python, torch grid_sample): " << count << " of "
            << got.numel() << " pixels differ\n";
}

}  // namespace
}  // namespace detkit::ops
