// detkit's CUDA kernels (detkit/ops/cuda/) against its CPU kernels, on random and edge inputs:
// empty inputs, boxes outside the image, tiny and inverted boxes. Every test skips, saying why,
// where detkit was built without its CUDA kernels or no GPU is visible (the CI machines compile
// them; scripts/gpu_check.sh runs these on a GPU). Tolerances: float sums of the same samples in
// another order (atomics, fused multiply-adds) 1e-4 absolute on values of order 1; double 1e-10.
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <iostream>
#include <string>
#include <vector>

#include "detkit/ops/batched_nms.h"
#include "detkit/ops/box_iou.h"
#include "detkit/ops/deform_conv.h"
#include "detkit/ops/nms.h"
#include "detkit/ops/paste_masks.h"
#include "detkit/ops/roi_align.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::max_abs_diff;

namespace detkit::ops {
namespace {

#if DETKIT_WITH_CUDA
constexpr bool kBuiltWithCuda = true;
#else
constexpr bool kBuiltWithCuda = false;
#endif

#define SKIP_WITHOUT_GPU()                                                            \
  do {                                                                                \
    if (!kBuiltWithCuda) GTEST_SKIP() << "detkit was built without its CUDA kernels"; \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible";       \
  } while (0)

const at::Device kCuda("cuda");

double tolerance(at::ScalarType dtype) { return dtype == at::kDouble ? 1e-10 : 1e-4; }

// Rois for a map of h x w pixels at 1/scale: inside, across the border, outside, sub-pixel,
// inverted, whole-image, and random ones, over a batch of two.
at::Tensor kernel_test_rois(int64_t h, int64_t w, double scale, at::ScalarType dtype) {
  const double H = h / scale, W = w / scale;
  std::vector<double> v = {0, 1,     2,     W * 0.6, H * 0.7, 1, -5,  -3,  W * 0.3, H * 0.4,
                           0, W + 2, H + 3, W + 20,  H + 30,  1, 3.2, 4.1, 3.5,     4.3,
                           0, 6,     7,     2,       3,       1, 0,   0,   W,       H};
  at::Tensor rois = at::tensor(v, at::kDouble).view({-1, 5});
  at::Tensor random = at::rand({200, 5}, at::kDouble);
  random.select(1, 0).mul_(2).floor_();
  random.select(1, 1).mul_(W);
  random.select(1, 2).mul_(H);
  random.select(1, 3).mul_(W * 0.6).add_(random.select(1, 1));
  random.select(1, 4).mul_(H * 0.6).add_(random.select(1, 2));
  return at::cat({rois, random}).to(dtype);
}

TEST(CudaKernels, RoiAlignForwardAndBackwardMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  torch::manual_seed(11);
  for (const at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    for (const bool aligned : {true, false}) {
      for (const int64_t ratio : {0, 2}) {
        const at::Tensor x = at::randn({2, 16, 25, 38}, at::TensorOptions().dtype(dtype));
        const at::Tensor rois = kernel_test_rois(25, 38, 0.125, dtype);
        const at::Tensor cpu = roi_align(x, rois, 0.125, 7, 7, ratio, aligned);
        const at::Tensor gpu = roi_align(x.to(kCuda), rois.to(kCuda), 0.125, 7, 7, ratio, aligned);
        const at::Tensor grad = at::randn_like(cpu);
        const at::Tensor cpu_grad =
            roi_align_backward(grad, rois, 0.125, 7, 7, 2, 16, 25, 38, ratio, aligned);
        const at::Tensor gpu_grad = roi_align_backward(grad.to(kCuda), rois.to(kCuda), 0.125, 7, 7,
                                                       2, 16, 25, 38, ratio, aligned);
        const double forward = max_abs_diff(gpu.cpu(), cpu);
        const double backward = max_abs_diff(gpu_grad.cpu(), cpu_grad);
        std::cout << "[ cuda ] roi_align " << dtype << " aligned=" << aligned << " ratio=" << ratio
                  << ": forward max diff " << forward << ", backward " << backward << "\n";
        EXPECT_LE(forward, tolerance(dtype));
        EXPECT_LE(backward, tolerance(dtype));
      }
    }
  }
}

TEST(CudaKernels, RoiAlignAutogradAndEmptyInputs) {
  SKIP_WITHOUT_GPU();
  const at::Tensor x = at::randn({1, 4, 9, 9}, at::TensorOptions().device(kCuda));
  const at::Tensor none = at::empty({0, 5}, x.options());
  EXPECT_EQ(roi_align(x, none, 1.0, 3, 3, 2, true).sizes(), (std::vector<int64_t>{0, 4, 3, 3}));
  const at::Tensor leaf = x.clone().requires_grad_(true);
  const at::Tensor rois = at::tensor({0.0f, 1.0f, 1.0f, 6.0f, 7.0f}, x.options()).view({1, 5});
  roi_align(leaf, rois, 1.0, 3, 3, 2, true).sum().backward();
  const at::Tensor cpu_leaf = x.cpu().requires_grad_(true);
  roi_align(cpu_leaf, rois.cpu(), 1.0, 3, 3, 2, true).sum().backward();
  EXPECT_LE(max_abs_diff(leaf.grad().cpu(), cpu_leaf.grad()), 1e-5);
}

TEST(CudaKernels, MultilevelRoiAlignMatchesTheCpuPerLevel) {
  SKIP_WITHOUT_GPU();
  torch::manual_seed(12);
  const std::vector<double> scales = {0.25, 0.125, 0.0625, 0.03125};
  std::vector<at::Tensor> cpu_maps, gpu_maps;
  for (const int64_t side : {64, 32, 16, 8}) {
    cpu_maps.push_back(at::randn({2, 8, side, side + 3}));
    gpu_maps.push_back(cpu_maps.back().to(kCuda));
  }
  const at::Tensor rois = kernel_test_rois(64, 67, 0.25, at::kFloat);
  const at::Tensor levels = at::randint(0, 4, {rois.size(0)}, at::kLong);
  const at::Tensor cpu = multilevel_roi_align(cpu_maps, rois, levels, scales, 7, 7, 0, true);
  const at::Tensor gpu =
      multilevel_roi_align(gpu_maps, rois.to(kCuda), levels.to(kCuda), scales, 7, 7, 0, true);
  const at::Tensor grad = at::randn_like(cpu);
  const std::vector<int64_t> heights = {64, 32, 16, 8}, widths = {67, 35, 19, 11};
  for (const bool channels_last : {false, true}) {
    const auto cpu_grads = multilevel_roi_align_backward(grad, rois, levels, scales, 7, 7, 2, 8,
                                                         heights, widths, 0, true, channels_last);
    const auto gpu_grads =
        multilevel_roi_align_backward(grad.to(kCuda), rois.to(kCuda), levels.to(kCuda), scales, 7,
                                      7, 2, 8, heights, widths, 0, true, channels_last);
    for (size_t l = 0; l < heights.size(); ++l) {
      const double d = max_abs_diff(gpu_grads[l].cpu(), cpu_grads[l]);
      std::cout << "[ cuda ] multilevel backward level " << l << " channels_last=" << channels_last
                << ": max diff " << d << "\n";
      EXPECT_LE(d, 1e-4);
      EXPECT_EQ(gpu_grads[l].is_contiguous(at::MemoryFormat::ChannelsLast), channels_last);
    }
  }
  const double forward = max_abs_diff(gpu.cpu(), cpu);
  std::cout << "[ cuda ] multilevel_roi_align forward max diff " << forward << "\n";
  EXPECT_LE(forward, 1e-4);
}

TEST(CudaKernels, NmsAndBatchedNmsKeepWhatTheCpuKeeps) {
  SKIP_WITHOUT_GPU();
  torch::manual_seed(13);
  for (const int64_t n : {0, 1, 64, 65, 1000, 6000}) {
    const at::Tensor xy = at::rand({n, 2}) * 500;
    const at::Tensor boxes = at::cat({xy, xy + at::rand({n, 2}) * 120 + 1}, 1);
    const at::Tensor scores = at::rand({n});
    const at::Tensor idxs = at::randint(0, 80, {n}, at::kLong);
    for (const double threshold : {0.5, 0.7}) {
      const at::Tensor cpu = nms(boxes, scores, threshold);
      const at::Tensor gpu = nms(boxes.to(kCuda), scores.to(kCuda), threshold);
      EXPECT_TRUE(at::equal(gpu.cpu(), cpu)) << n << " boxes, threshold " << threshold;
      // CPU and CUDA switch to per-category NMS at different sizes (4000 and 20000
      // coordinates, as torchvision): the kept sets agree, whatever the strategy.
      const at::Tensor cpu_b = batched_nms(boxes, scores, idxs, threshold);
      const at::Tensor gpu_b =
          batched_nms(boxes.to(kCuda), scores.to(kCuda), idxs.to(kCuda), threshold);
      EXPECT_TRUE(at::equal(std::get<0>(gpu_b.cpu().sort()), std::get<0>(cpu_b.sort())))
          << n << " boxes, batched, threshold " << threshold;
    }
  }
}

TEST(CudaKernels, BoxIouMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  const at::Tensor xy = at::rand({300, 2}) * 200;
  const at::Tensor a = at::cat({xy, xy + at::rand({300, 2}) * 50}, 1);
  const at::Tensor b = a.slice(0, 0, 120) + 3;
  const double d = max_abs_diff(box_iou(a.to(kCuda), b.to(kCuda)).cpu(), box_iou(a, b));
  std::cout << "[ cuda ] box_iou max diff " << d << "\n";
  EXPECT_LE(d, 1e-6);
  EXPECT_EQ(box_iou(a.slice(0, 0, 0).to(kCuda), b.to(kCuda)).sizes(),
            (std::vector<int64_t>{0, 120}));
}

TEST(CudaKernels, DeformConvForwardAndBackwardMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  torch::manual_seed(5);
  for (const at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    const auto opt = at::TensorOptions().dtype(dtype);
    const at::Tensor x = at::randn({2, 6, 13, 11}, opt);
    const at::Tensor weight = at::randn({8, 3, 3, 3}, opt);        // groups 2
    at::Tensor offset = at::randn({2, 2 * 3 * 9, 7, 6}, opt) * 4;  // offset groups 3, stride 2
    offset.view(-1).slice(0, 0, 5).fill_(-1.0);
    const at::Tensor mask = at::rand({2, 3 * 9, 7, 6}, opt);
    const at::Tensor bias = at::randn({8}, opt);
    const at::Tensor grad = at::randn({2, 8, 7, 6}, opt);
    auto run = [&](const at::Device& device) {
      const at::Tensor out =
          deform_conv2d(x.to(device), weight.to(device), offset.to(device), mask.to(device),
                        bias.to(device), 2, 2, 1, 1, 1, 1, 2, 3);
      const auto g = deform_conv2d_backward(grad.to(device), x.to(device), weight.to(device),
                                            offset.to(device), mask.to(device), 2, 2, 1, 1, 1, 1, 2,
                                            3, {true, true, true, true, true});
      return std::vector<at::Tensor>{out.cpu(),
                                     std::get<0>(g).cpu(),
                                     std::get<1>(g).cpu(),
                                     std::get<2>(g).cpu(),
                                     std::get<3>(g).cpu(),
                                     std::get<4>(g).cpu()};
    };
    const std::vector<at::Tensor> cpu = run(at::kCPU), gpu = run(kCuda);
    const char* names[] = {"output", "input", "weight", "offset", "mask", "bias"};
    for (size_t i = 0; i < cpu.size(); ++i) {
      const double d = max_abs_diff(gpu[i], cpu[i]);
      std::cout << "[ cuda ] deform_conv2d " << dtype << " " << names[i] << " max diff " << d
                << "\n";
      EXPECT_LE(d, tolerance(dtype) * 10) << names[i];  // cuBLAS's and the atomics' sums
    }
  }
  const at::Tensor empty = at::zeros({0, 2, 5, 5}, kCuda);
  EXPECT_EQ(deform_conv2d(empty, at::zeros({2, 2, 3, 3}, kCuda), at::zeros({0, 18, 5, 5}, kCuda),
                          c10::nullopt, c10::nullopt, 1, 1, 1, 1, 1, 1, 1, 1)
                .sizes(),
            (std::vector<int64_t>{0, 2, 5, 5}));
}

TEST(CudaKernels, PastedMasksMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  torch::manual_seed(14);
  const int64_t n = 50, h = 480, w = 640;
  const at::Tensor masks = at::rand({n, 28, 28});
  const at::Tensor xy = at::rand({n, 2}) * at::tensor({700.0f, 520.0f}) - 30;
  at::Tensor boxes = at::cat({xy, xy + at::rand({n, 2}) * 200 + 0.3}, 1);
  const at::Tensor cpu = paste_masks_in_image(masks, boxes, h, w, 0.5);
  const at::Tensor gpu = paste_masks_in_image(masks.to(kCuda), boxes.to(kCuda), h, w, 0.5).cpu();
  const int64_t differ = cpu.ne(gpu).sum().item<int64_t>();
  std::cout << "[ cuda ] paste_masks_in_image: " << differ << " of " << cpu.sum().item<int64_t>()
            << " set pixels differ\n";
  // Values that round to either side of the threshold in one of the two roundings only.
  EXPECT_LE(differ, cpu.sum().item<int64_t>() / 10000 + 5);
  EXPECT_EQ(paste_masks_in_image(masks.slice(0, 0, 0).to(kCuda), boxes.slice(0, 0, 0).to(kCuda), h,
                                 w, 0.5)
                .sizes(),
            (std::vector<int64_t>{0, h, w}));
}

TEST(CudaKernels, AutocastRunsTheOpsInFloat32) {
  SKIP_WITHOUT_GPU();
  const at::Tensor x = at::randn({1, 8, 20, 20}, at::TensorOptions().device(kCuda));
  const at::Tensor rois = at::tensor({0.0f, 2.0f, 3.0f, 15.0f, 17.0f}, x.options()).view({1, 5});
  at::Tensor half_result;
  {
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    half_result = roi_align(x.to(at::kHalf), rois, 1.0, 7, 7, 2, true);
    at::autocast::set_autocast_enabled(at::kCUDA, false);
  }
  EXPECT_EQ(half_result.scalar_type(), at::kHalf);
  const at::Tensor reference = roi_align(x.to(at::kHalf).to(at::kFloat), rois, 1.0, 7, 7, 2, true);
  EXPECT_LE(max_abs_diff(half_result.to(at::kFloat).cpu(), reference.cpu()), 1e-2);
}

}  // namespace
}  // namespace detkit::ops
