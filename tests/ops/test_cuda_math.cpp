// The arithmetic of detkit's CUDA kernels (detkit/ops/cuda/*_math.h), run by the host compiler
// element by element, against the CPU kernels: ROIAlign's bins and gradients, NMS's suppression
// words and sweep, box IoU and mask pasting. This needs no GPU, so the per-element code the CUDA
// kernels run is checked on every machine; the kernels themselves (launch, indexing, atomics)
// are checked on a GPU by test_cuda_kernels.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <vector>

#include "detkit/ops/box_iou.h"
#include "detkit/ops/checks.h"
#include "detkit/ops/cuda/deform_conv_math.h"
#include "detkit/ops/cuda/nms_math.h"
#include "detkit/ops/cuda/paste_masks_math.h"
#include "detkit/ops/cuda/roi_align_math.h"
#include "detkit/ops/deform_conv.h"
#include "detkit/ops/nms.h"
#include "detkit/ops/paste_masks.h"
#include "detkit/ops/roi_align.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::max_abs_diff;

namespace detkit::ops {
namespace {

// Rois over a map of `height` x `width` image pixels at 1/scale: ordinary boxes, boxes partly
// and wholly outside the image, sub-pixel and inverted boxes, in both images of the batch.
at::Tensor math_edge_rois(int64_t height, int64_t width, double scale, at::ScalarType dtype) {
  const double h = height / scale, w = width / scale;
  std::vector<double> v = {0, 1,     2,     w * 0.6, h * 0.7, 1, w * 0.2, h * 0.1, w * 0.9, h,
                           0, -5,    -3,    w * 0.3, h * 0.4, 1, w * 0.8, h * 0.5, w + 9,   h + 4,
                           0, w + 2, h + 3, w + 20,  h + 30,  1, 3.2,     4.1,     3.5,     4.3,
                           0, 6,     7,     2,       3,       1, 0,       0,       w,       h};
  at::Tensor rois = at::tensor(v, at::kDouble).view({-1, 5});
  at::Tensor random = at::rand({12, 5}, at::kDouble);
  random.select(1, 0).mul_(2).floor_();
  random.select(1, 1).mul_(w * 0.8);
  random.select(1, 2).mul_(h * 0.8);
  random.select(1, 3).mul_(w * 0.5).add_(random.select(1, 1));
  random.select(1, 4).mul_(h * 0.5).add_(random.select(1, 2));
  return at::cat({rois, random}).to(dtype);
}

struct MathPool {
  double scale;
  int64_t ph, pw, ratio;
  bool aligned;
};

template <typename T>
at::Tensor pooled_by_math(const at::Tensor& input, const at::Tensor& rois, const MathPool& p) {
  const int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
  at::Tensor out = at::empty({rois.size(0), c, p.ph, p.pw}, input.options());
  const at::Tensor in = input.contiguous(), r = rois.contiguous();
  const T* x = in.data_ptr<T>();
  T* o = out.data_ptr<T>();
  for (int64_t k = 0; k < rois.size(0); ++k) {
    const auto g = cuda_math::roi_geometry<T>(r.data_ptr<T>() + 5 * k, static_cast<T>(p.scale),
                                              p.ph, p.pw, p.ratio, p.aligned, n);
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < p.ph; ++y)
        for (int64_t xx = 0; xx < p.pw; ++xx)
          *o++ = cuda_math::pooled_bin<T>(x + (g.batch * c + ch) * h * w, h, w, g, y, xx);
  }
  return out;
}

template <typename T>
at::Tensor gradient_by_math(const at::Tensor& grad, const at::Tensor& rois, const MathPool& p,
                            at::IntArrayRef input_shape) {
  const int64_t n = input_shape[0], c = input_shape[1], h = input_shape[2], w = input_shape[3];
  at::Tensor out = at::zeros(input_shape, grad.options());
  const at::Tensor gr = grad.contiguous(), r = rois.contiguous();
  const T* g_out = gr.data_ptr<T>();
  T* target = out.data_ptr<T>();
  for (int64_t k = 0; k < rois.size(0); ++k) {
    const auto g = cuda_math::roi_geometry<T>(r.data_ptr<T>() + 5 * k, static_cast<T>(p.scale),
                                              p.ph, p.pw, p.ratio, p.aligned, n);
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < p.ph; ++y)
        for (int64_t xx = 0; xx < p.pw; ++xx) {
          T* plane = target + (g.batch * c + ch) * h * w;
          cuda_math::spread_bin_gradient<T>(*g_out++, h, w, g, y, xx,
                                            [plane](int64_t pos, T v) { plane[pos] += v; });
        }
  }
  return out;
}

template <typename T>
void check_roi_align(at::ScalarType dtype) {
  torch::manual_seed(3);
  const at::Tensor input = at::randn({2, 3, 11, 14}, at::TensorOptions().dtype(dtype));
  for (const MathPool& p : {MathPool{0.5, 7, 7, 0, true}, MathPool{0.5, 7, 7, 2, true},
                            MathPool{0.25, 5, 3, 0, false}, MathPool{0.25, 4, 4, 3, false}}) {
    const at::Tensor rois = math_edge_rois(input.size(2), input.size(3), p.scale, dtype);
    const at::Tensor cpu = roi_align(input, rois, p.scale, p.ph, p.pw, p.ratio, p.aligned);
    const at::Tensor math = pooled_by_math<T>(input, rois, p);
    const at::Tensor grad = at::randn_like(cpu);
    const at::Tensor cpu_grad =
        roi_align_backward(grad, rois, p.scale, p.ph, p.pw, 2, 3, 11, 14, p.ratio, p.aligned);
    const at::Tensor math_grad = gradient_by_math<T>(grad, rois, p, input.sizes());
    std::cout << "[ cuda math ] roi_align " << dtype << " aligned=" << p.aligned
              << " ratio=" << p.ratio << ": forward max diff " << max_abs_diff(math, cpu)
              << ", backward " << max_abs_diff(math_grad, cpu_grad) << "\n";
    // The same operations in the same order as the CPU kernel: equal to the last bit.
    EXPECT_TRUE(at::equal(math, cpu));
    EXPECT_TRUE(at::equal(math_grad, cpu_grad));
  }
}

TEST(CudaMath, RoiAlignBinsAndGradientsAreTheCpuKernels) {
  check_roi_align<float>(at::kFloat);
  check_roi_align<double>(at::kDouble);
}

TEST(CudaMath, RoiAlignGivesAnInvalidRoiZerosInsteadOfReadingOutside) {
  const float bad_batch[] = {2, 0, 0, 4, 4};
  const float nan_corner[] = {0, 0, std::numeric_limits<float>::quiet_NaN(), 4, 4};
  const float inf_corner[] = {0, 0, 0, std::numeric_limits<float>::infinity(), 4};
  const float negative_batch[] = {-1, 0, 0, 4, 4};
  const float plane[16] = {1};
  for (const float* roi : {bad_batch, nan_corner, inf_corner, negative_batch}) {
    const auto g = cuda_math::roi_geometry<float>(roi, 1.0f, 2, 2, 0, true, 2);
    EXPECT_FALSE(g.valid);
    EXPECT_EQ(cuda_math::pooled_bin<float>(plane, 4, 4, g, 0, 0), 0.0f);
    int calls = 0;
    cuda_math::spread_bin_gradient<float>(1.0f, 4, 4, g, 0, 0, [&](int64_t, float) { ++calls; });
    EXPECT_EQ(calls, 0);
  }
}

// NMS by the CUDA kernel's words and the host sweep, as original box indices.
template <typename T>
at::Tensor nms_by_math(const at::Tensor& boxes, const at::Tensor& scores, double threshold) {
  const int64_t n = boxes.size(0);
  const at::Tensor order = std::get<1>(scores.sort(true, 0, true));
  const at::Tensor sorted = boxes.index_select(0, order).contiguous();
  const int64_t blocks = (n + cuda_math::kNmsBlock - 1) / cuda_math::kNmsBlock;
  std::vector<uint64_t> words(n * blocks);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t b = i / cuda_math::kNmsBlock; b < blocks; ++b)
      words[i * blocks + b] = cuda_math::suppression_word(sorted.data_ptr<T>(), n, i, b, threshold);
  const std::vector<int64_t> kept = cuda_math::sweep_words(words.data(), n);
  return order.index_select(0, at::tensor(kept, at::kLong));
}

TEST(CudaMath, NmsWordsAndSweepKeepWhatTheCpuKernelKeeps) {
  torch::manual_seed(5);
  for (const int64_t n : {1, 63, 64, 65, 300}) {
    for (const double threshold : {0.3, 0.5, 0.7}) {
      at::Tensor xy = at::rand({n, 2}, at::kFloat) * 60;
      at::Tensor boxes = at::cat({xy, xy + at::rand({n, 2}, at::kFloat) * 30 + 1}, 1);
      at::Tensor scores = (at::rand({n}, at::kFloat) * 8).round();  // many ties
      const at::Tensor cpu = nms(boxes, scores, threshold);
      const at::Tensor math = nms_by_math<float>(boxes, scores, threshold);
      EXPECT_TRUE(at::equal(cpu, math)) << n << " boxes, threshold " << threshold;
      const at::Tensor b64 = boxes.to(at::kDouble), s64 = scores.to(at::kDouble);
      EXPECT_TRUE(at::equal(nms(b64, s64, threshold), nms_by_math<double>(b64, s64, threshold)));
    }
  }
}

TEST(CudaMath, BoxIouIsTheCpuKernels) {
  torch::manual_seed(6);
  at::Tensor xy = at::rand({40, 2}, at::kFloat) * 50;
  at::Tensor a = at::cat({xy, xy + at::rand({40, 2}, at::kFloat) * 20}, 1);  // some empty
  at::Tensor b = a.flip(0) + 0.5;
  const at::Tensor cpu = box_iou(a, b);
  at::Tensor math = at::empty_like(cpu);
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 40; ++j)
      math[i][j] =
          cuda_math::box_pair_iou(a.data_ptr<float>() + 4 * i, b.data_ptr<float>() + 4 * j);
  EXPECT_TRUE(at::equal(cpu.nan_to_num(-1), math.nan_to_num(-1)))
      << "max diff " << max_abs_diff(cpu.nan_to_num(-1), math.nan_to_num(-1));
}

template <bool kFused>
at::Tensor pasted_by_math(const at::Tensor& masks, const at::Tensor& boxes, int64_t h, int64_t w,
                          float threshold) {
  const int64_t n = masks.size(0), mh = masks.size(1), mw = masks.size(2);
  at::Tensor out = at::empty({n, h, w}, at::kBool);
  bool* o = out.data_ptr<bool>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        *o++ = cuda_math::pasted_pixel<kFused, float, float>(
            masks.data_ptr<float>() + i * mh * mw, mh, mw, boxes.data_ptr<float>() + 4 * i, h, w, y,
            x, threshold);
  return out;
}

TEST(CudaMath, PastedPixelsAreTheCpuKernels) {
  torch::manual_seed(7);
  const int64_t n = 9, h = 37, w = 45;
  const at::Tensor masks = at::rand({n, 28, 28}, at::kFloat);
  at::Tensor boxes = at::tensor({2.3f,  4.1f,  20.7f, 30.2f, -6.0f, -3.0f, 10.0f, 12.0f, 40.0f,
                                 30.0f, 60.0f, 50.0f, 10.2f, 10.4f, 10.6f, 10.9f, 50.0f, 40.0f,
                                 70.0f, 60.0f, 0.0f,  0.0f,  45.0f, 37.0f, 5.5f,  6.5f,  5.5f,
                                 20.0f, 30.1f, 2.2f,  44.9f, 36.8f, 1.0f,  1.0f,  3.0f,  3.0f})
                         .view({n, 4});
  for (const float threshold : {0.5f, 0.2f}) {
    const at::Tensor cpu = paste_masks_in_image(masks, boxes, h, w, threshold);
    const at::Tensor fused = pasted_by_math<true>(masks, boxes, h, w, threshold);
    const at::Tensor plain = pasted_by_math<false>(masks, boxes, h, w, threshold);
    const int64_t fused_diff = cpu.ne(fused).sum().item<int64_t>();
    const int64_t plain_diff = cpu.ne(plain).sum().item<int64_t>();
    std::cout << "[ cuda math ] paste threshold " << threshold << ": " << fused_diff
              << " pixels differ with fused multiply-adds, " << plain_diff << " without, of "
              << cpu.numel() << " (" << cpu.sum().item<int64_t>() << " set)\n";
    // The CPU kernel follows whichever rounding this libtorch's grid_sample uses.
    EXPECT_TRUE(fused_diff == 0 || plain_diff == 0);
    EXPECT_GT(cpu.sum().item<int64_t>(), 0);
  }
}

// deform_conv2d as the CUDA kernels compute it, one thread's function at a time in their index
// order: the columns element by element, then the same matrix products as the CPU kernel; the
// input gradient added in (channel, tap, pixel) order (the CUDA kernel's atomics add in any
// order); the offset and mask gradients per (offset group, tap, pixel).
std::vector<at::Tensor> deform_by_math(const at::Tensor& x, const at::Tensor& weight,
                                       const at::Tensor& offset, const at::Tensor& mask,
                                       const at::Tensor& bias, const at::Tensor& grad,
                                       int64_t stride, int64_t pad, int64_t dilation,
                                       int64_t groups, int64_t offset_groups) {
  const DeformConvShape s =
      check_deform_conv2d("deform_by_math", x, weight, offset, mask, bias, stride, stride, pad, pad,
                          dilation, dilation, groups, offset_groups);
  const int64_t taps = s.taps(), P = s.positions(), group_out = s.out_channels / groups;
  const at::Tensor w = weight.view({groups, group_out, s.rows_per_group()});
  at::Tensor out = at::empty({s.batch, s.out_channels, s.out_h, s.out_w}, x.options());
  at::Tensor grad_input = at::zeros_like(x), grad_offset = at::zeros_like(offset);
  at::Tensor grad_mask = at::zeros_like(mask), grad_weight = at::zeros_like(weight);
  const at::Tensor gw = grad_weight.view({groups, group_out, s.rows_per_group()});
  at::Tensor columns = at::empty({groups, s.rows_per_group(), P}, x.options());
  float* col = columns.data_ptr<float>();
  for (int64_t n = 0; n < s.batch; ++n) {
    const float* in = x[n].data_ptr<float>();
    const float* m = mask[n].data_ptr<float>();
    const float* off = offset[n].data_ptr<float>();
    for (int64_t c = 0; c < s.channels; ++c)
      for (int64_t k = 0; k < taps; ++k)
        for (int64_t p = 0; p < P; ++p)
          col[(c * taps + k) * P + p] = cuda_math::column_value(s, in, m, off, c, k, p);
    const at::Tensor out_n = out[n].view({groups, group_out, P});
    for (int64_t g = 0; g < groups; ++g) {
      at::Tensor o = out_n[g];
      at::mm_out(o, w[g], columns[g]);
    }
    const at::Tensor go = grad[n].view({groups, group_out, P});
    for (int64_t g = 0; g < groups; ++g) gw[g].addmm_(go[g], columns[g].t());
    for (int64_t g = 0; g < groups; ++g) {
      at::Tensor c_g = columns[g];
      at::mm_out(c_g, w[g].t(), go[g]);
    }
    float* gi = grad_input[n].data_ptr<float>();
    for (int64_t c = 0; c < s.channels; ++c)
      for (int64_t k = 0; k < taps; ++k)
        for (int64_t p = 0; p < P; ++p) {
          int64_t at[4];
          float add[4];
          cuda_math::input_gradient(s, col, m, off, c, k, p, at, add);
          for (int q = 0; q < 4; ++q)
            if (at[q] >= 0) gi[c * s.height * s.width + at[q]] += add[q];
        }
    float* go_off = grad_offset[n].data_ptr<float>();
    float* go_mask = grad_mask[n].data_ptr<float>();
    for (int64_t row = 0; row < offset_groups * taps; ++row)
      for (int64_t p = 0; p < P; ++p)
        cuda_math::coordinate_gradient(s, in, m, off, col, row, p, &go_off[2 * row * P + p],
                                       &go_off[(2 * row + 1) * P + p], &go_mask[row * P + p]);
  }
  out.add_(bias.view({1, s.out_channels, 1, 1}));
  return {out, grad_input, grad_weight, grad_offset, grad_mask};
}

TEST(CudaMath, DeformConvColumnsAndGradientsAreTheCpuKernels) {
  torch::manual_seed(11);
  struct Case {
    int64_t channels, out_channels, size, kernel, stride, pad, dilation, groups, offset_groups;
  };
  for (const Case& c : {Case{4, 6, 9, 3, 1, 1, 1, 1, 1}, Case{6, 4, 11, 3, 2, 2, 2, 2, 3},
                        Case{2, 2, 5, 1, 1, 0, 1, 1, 2}}) {
    const int64_t out = (c.size + 2 * c.pad - c.dilation * (c.kernel - 1) - 1) / c.stride + 1;
    const int64_t taps = c.kernel * c.kernel;
    const at::Tensor x = at::randn({2, c.channels, c.size, c.size});
    const at::Tensor weight =
        at::randn({c.out_channels, c.channels / c.groups, c.kernel, c.kernel});
    // Offsets up to a few pixels, some samples outside the map, some exactly on a corner.
    at::Tensor offset = at::randn({2, 2 * c.offset_groups * taps, out, out}) * 3;
    offset.view(-1).slice(0, 0, 7).fill_(-1.0);
    const at::Tensor mask = at::rand({2, c.offset_groups * taps, out, out});
    const at::Tensor bias = at::randn({c.out_channels});
    const at::Tensor grad = at::randn({2, c.out_channels, out, out});
    const at::Tensor cpu = deform_conv2d(x, weight, offset, mask, bias, c.stride, c.stride, c.pad,
                                         c.pad, c.dilation, c.dilation, c.groups, c.offset_groups);
    const auto [gi, gw, goff, gm, gb] = deform_conv2d_backward(
        grad, x, weight, offset, mask, c.stride, c.stride, c.pad, c.pad, c.dilation, c.dilation,
        c.groups, c.offset_groups, {true, true, true, true, true});
    const std::vector<at::Tensor> math =
        deform_by_math(x, weight, offset, mask, bias, grad, c.stride, c.pad, c.dilation, c.groups,
                       c.offset_groups);
    const std::vector<at::Tensor> expected = {cpu, gi, gw, goff, gm};
    const char* names[] = {"output", "input grad", "weight grad", "offset grad", "mask grad"};
    for (size_t i = 0; i < expected.size(); ++i) {
      const double diff = (math[i] - expected[i]).abs().max().item<double>();
      std::cout << "[ cuda math ] deform_conv2d groups " << c.groups << ", offset groups "
                << c.offset_groups << ", stride " << c.stride << ": " << names[i] << " max diff "
                << diff << "\n";
      EXPECT_EQ(diff, 0.0) << names[i];
    }
  }
}

}  // namespace
}  // namespace detkit::ops
