// detkit::ops::multilevel_roi_align: each roi's row, and each level's gradient, bit for bit what
// roi_align gives on that roi's level (roi_align itself is checked against torchvision in
// test_roi_align.cpp); bad levels named by roi; autograd into every level; double backward refused.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "detkit/ops/roi_align.h"

namespace detkit::ops {
namespace {

const std::vector<double> kScales = {1.0 / 4, 1.0 / 8, 1.0 / 16};

// Three levels of a 2-image batch of a 120 x 100 image, 40 channels (more than a 32-wide tile).
std::vector<at::Tensor> pyramid(at::ScalarType dtype) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(21);
  std::vector<at::Tensor> out;
  for (double scale : kScales)
    out.push_back(at::randn({2, 40, int64_t(120 * scale), int64_t(100 * scale)}, gen).to(dtype));
  return out;
}

// 30 rois over both images, some partly outside the image.
at::Tensor rois(at::ScalarType dtype) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(22);
  const at::Tensor xy = at::rand({30, 2}, gen) * 110 - 10;
  const at::Tensor wh = at::rand({30, 2}, gen) * 60 + 1;
  const at::Tensor batch = (at::arange(30) % 2).unsqueeze(1).to(at::kFloat);
  return at::cat({batch, xy, xy + wh}, 1).to(dtype);
}

// Levels in no particular order; level 2 gets no roi.
at::Tensor levels() { return (at::arange(30, at::kLong) * 7 % 5) % 2; }

std::string message(const std::function<void()>& call) {
  try {
    call();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "no error";
}

TEST(MultilevelRoiAlign, EachRowAndEachLevelsGradientIsRoiAlignsOnThatLevel) {
  at::set_num_threads(2);
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    for (bool aligned : {false, true}) {
      for (int64_t ratio : {0, 2}) {
        const std::vector<at::Tensor> maps = pyramid(dtype);
        const at::Tensor r = rois(dtype), lv = levels();
        const at::Tensor out = multilevel_roi_align(maps, r, lv, kScales, 7, 5, ratio, aligned);
        ASSERT_EQ(out.sizes(), at::IntArrayRef({30, 40, 7, 5}));
        const at::Tensor grad = at::randn(out.sizes()).to(dtype);
        std::vector<int64_t> heights, widths;
        for (const auto& m : maps) heights.push_back(m.size(2)), widths.push_back(m.size(3));
        const std::vector<at::Tensor> grads = multilevel_roi_align_backward(
            grad, r, lv, kScales, 7, 5, 2, 40, heights, widths, ratio, aligned);
        ASSERT_EQ(grads.size(), maps.size());
        for (int64_t l = 0; l < 3; ++l) {
          const at::Tensor rows = (lv == l).nonzero().select(1, 0);
          const at::Tensor want =
              roi_align(maps[l], r.index_select(0, rows), kScales[l], 7, 5, ratio, aligned);
          EXPECT_TRUE(at::equal(out.index_select(0, rows), want)) << "level " << l;
          const at::Tensor want_grad =
              roi_align_backward(grad.index_select(0, rows), r.index_select(0, rows), kScales[l], 7,
                                 5, 2, 40, heights[l], widths[l], ratio, aligned);
          EXPECT_TRUE(at::equal(grads[l], want_grad)) << "level " << l;
        }
        EXPECT_EQ(grads[2].abs().max().item<double>(), 0.0);  // no roi on level 2
      }
    }
  }
}

TEST(MultilevelRoiAlign, AutogradReachesEveryLevelWithRois) {
  std::vector<at::Tensor> maps;
  for (const auto& m : pyramid(at::kFloat)) maps.push_back(m.requires_grad_(true));
  const at::Tensor r = rois(at::kFloat), lv = levels();
  const at::Tensor y = multilevel_roi_align(maps, r, lv, kScales, 7, 7, 2, true);
  ASSERT_TRUE(y.requires_grad());
  const at::Tensor v = at::randn(y.sizes());
  (y * v).sum().backward();
  std::vector<int64_t> heights, widths;
  for (const auto& m : maps) heights.push_back(m.size(2)), widths.push_back(m.size(3));
  const auto want =
      multilevel_roi_align_backward(v, r, lv, kScales, 7, 7, 2, 40, heights, widths, 2, true);
  for (size_t l = 0; l < maps.size(); ++l) {
    ASSERT_TRUE(maps[l].grad().defined()) << "level " << l;
    EXPECT_TRUE(at::equal(maps[l].grad(), want[l])) << "level " << l;
  }
  EXPECT_GT(maps[0].grad().abs().sum().item<float>(), 0.0f);
  EXPECT_GT(maps[1].grad().abs().sum().item<float>(), 0.0f);
}

TEST(MultilevelRoiAlign, ChannelsLastMapsGiveTheSameValuesAndChannelsLastGradients) {
  const auto cl = at::MemoryFormat::ChannelsLast;
  std::vector<at::Tensor> nchw, nhwc;
  for (const auto& m : pyramid(at::kFloat)) {
    nchw.push_back(m.clone().requires_grad_(true));
    nhwc.push_back(m.contiguous(cl).requires_grad_(true));
  }
  const at::Tensor r = rois(at::kFloat), lv = levels();
  const at::Tensor y = multilevel_roi_align(nchw, r, lv, kScales, 7, 7, 0, false);
  const at::Tensor y_cl = multilevel_roi_align(nhwc, r, lv, kScales, 7, 7, 0, false);
  EXPECT_TRUE(at::equal(y, y_cl));
  const at::Tensor v = at::randn(y.sizes());
  // The op's own gradients, as autograd::grad returns them: a leaf's .grad() would be laid out
  // like the leaf whatever the op returned.
  const auto g = torch::autograd::grad({y}, nchw, {v});
  const auto g_cl = torch::autograd::grad({y_cl}, nhwc, {v});
  for (size_t l = 0; l < nchw.size(); ++l) {  // level 2 has no roi: zeros, in the maps' layout
    EXPECT_TRUE(g[l].is_contiguous()) << "level " << l;
    EXPECT_TRUE(g_cl[l].is_contiguous(cl) && !g_cl[l].is_contiguous()) << "level " << l;
    EXPECT_TRUE(at::equal(g[l], g_cl[l])) << "level " << l;
  }
}

TEST(MultilevelRoiAlign, NoRoisGiveAnEmptyResultAndZeroGradients) {
  std::vector<at::Tensor> maps;
  for (const auto& m : pyramid(at::kFloat)) maps.push_back(m.requires_grad_(true));
  const at::Tensor y = multilevel_roi_align(maps, at::zeros({0, 5}), at::zeros({0}, at::kLong),
                                            kScales, 7, 7, 2, true);
  EXPECT_EQ(y.sizes(), at::IntArrayRef({0, 40, 7, 7}));
  y.sum().backward();
  for (const auto& m : maps) EXPECT_EQ(m.grad().abs().sum().item<float>(), 0.0f);
}

TEST(MultilevelRoiAlign, RejectsBadLevelsAndPyramids) {
  const std::vector<at::Tensor> maps = pyramid(at::kFloat);
  const at::Tensor r = rois(at::kFloat);
  at::Tensor bad = levels();
  bad[17] = 3;
  auto run = [&](const std::vector<at::Tensor>& m, const at::Tensor& lv,
                 const std::vector<double>& scales) {
    return message([&] { multilevel_roi_align(m, r, lv, scales, 7, 7, 2, true); });
  };
  EXPECT_NE(run(maps, bad, kScales).find("roi 17 is assigned level 3 outside [0, 3)"),
            std::string::npos);
  EXPECT_NE(run(maps, levels().to(at::kInt), kScales).find("int64"), std::string::npos);
  EXPECT_NE(run(maps, levels().slice(0, 0, 29), kScales).find("K = 30"), std::string::npos);
  EXPECT_NE(run(maps, levels(), {0.25, 0.125}).find("3 feature levels but 2 spatial scales"),
            std::string::npos);
  EXPECT_NE(run({}, levels(), {}).find("0 feature levels"), std::string::npos);
  std::vector<at::Tensor> narrow = maps;
  narrow[1] = narrow[1].slice(1, 0, 8);
  EXPECT_NE(run(narrow, levels(), kScales).find("level 1 must be (2, 40, H, W)"),
            std::string::npos);
  std::vector<at::Tensor> mixed = maps;
  mixed[2] = mixed[2].to(at::kDouble);
  EXPECT_NE(run(mixed, levels(), kScales).find("level 2 is Double"), std::string::npos);
  at::Tensor nan_roi = r.clone();
  nan_roi[4][3] = std::nan("");
  EXPECT_NE(message([&] {
              multilevel_roi_align(maps, nan_roi, levels(), kScales, 7, 7, 2, true);
            }).find("roi 4 has a non-finite corner"),
            std::string::npos);
}

TEST(MultilevelRoiAlign, BackwardRejectsBadShapes) {
  const at::Tensor r = rois(at::kFloat), lv = levels();
  const at::Tensor grad = at::randn({30, 40, 7, 7});
  auto run = [&](const at::Tensor& g, std::vector<int64_t> heights, int64_t channels) {
    return message([&] {
      multilevel_roi_align_backward(g, r, lv, kScales, 7, 7, 2, channels, heights, {25, 12, 6}, 2,
                                    true);
    });
  };
  EXPECT_NE(run(grad, {30, 15}, 40).find("3 spatial scales, 2 heights and 3 widths"),
            std::string::npos);
  EXPECT_NE(run(grad, {30, -1, 7}, 40).find("level 1 is -1x12"), std::string::npos);
  EXPECT_NE(run(grad, {30, 15, 7}, -2).find("channels -2 must be non-negative"), std::string::npos);
  EXPECT_NE(run(grad.slice(0, 0, 29), {30, 15, 7}, 40).find("grad must be (30, 40, 7, 7)"),
            std::string::npos);
}

TEST(MultilevelRoiAlign, DoubleBackwardIsRefused) {
  std::vector<at::Tensor> maps;
  for (const auto& m : pyramid(at::kFloat)) maps.push_back(m.requires_grad_(true));
  const at::Tensor y =
      multilevel_roi_align(maps, rois(at::kFloat), levels(), kScales, 2, 2, 2, false);
  EXPECT_THROW(torch::autograd::grad({y.pow(2).sum()}, {maps[0]}, {}, true, true), c10::Error);
}

}  // namespace
}  // namespace detkit::ops
