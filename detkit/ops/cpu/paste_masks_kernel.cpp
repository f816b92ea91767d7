// CPU kernel of detkit::paste_masks_in_image: Detectron2's CPU path (one mask at a time over the
// box's pixel region, "skip_empty") without building a sampling grid. Parallel over masks.
//
// Per pixel the arithmetic is that of Detectron2's tensor expressions followed by PyTorch's CPU
// grid_sample kernel. grid_sample's vectorised (AVX2 / AVX-512) build fuses multiply-adds: the
// grid coordinate is unnormalised as fma(g + 1, size / 2, -0.5) and the corners are summed as
// fma(se_v, se, fma(sw_v, sw, fma(ne_v, ne, nw_v * nw))); its scalar build (ATEN_CPU_CAPABILITY
// default) rounds every operation. The kernel probes once which one libtorch runs and follows it,
// so pasted values equal grid_sample's bit for bit and the thresholded pixels agree.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "detkit/ops/checks.h"
#include "detkit/ops/cuda/paste_masks_math.h"

namespace detkit::ops {
namespace {

using cuda_math::axis_tap;
using cuda_math::AxisTap;
using cuda_math::interpolate;
using cuda_math::pixel_tap;

// Whether this process's grid_sample fuses multiply-adds: the choice of CPU kernel is internal to
// libtorch, so sample fixed points with it once and see which rounding reproduces them.
bool grid_sample_fuses() {
  static const bool fused = [] {
    constexpr int64_t kSize = 5, kPoints = 256;
    auto fraction = [](float x) { return x - std::floor(x); };
    at::Tensor mask = at::empty({1, 1, kSize, kSize}, at::kFloat);
    at::Tensor grid = at::empty({1, 1, kPoints, 2}, at::kFloat);
    float* m = mask.data_ptr<float>();
    float* g = grid.data_ptr<float>();
    for (int64_t i = 0; i < kSize * kSize; ++i) m[i] = fraction(i * 0.7548777f);
    for (int64_t i = 0; i < 2 * kPoints; ++i) g[i] = fraction(i * 0.6180340f) * 2.4f - 1.2f;
    const at::Tensor out = at::grid_sampler(mask, grid, 0, 0, false).contiguous();
    const float* o = out.data_ptr<float>();
    int64_t fused_hits = 0, plain_hits = 0;
    for (int64_t p = 0; p < kPoints; ++p) {
      const float gx = g[2 * p], gy = g[2 * p + 1];
      fused_hits +=
          interpolate<true>(m, kSize, axis_tap<true>(gy, kSize), axis_tap<true>(gx, kSize)) == o[p];
      plain_hits += interpolate<false>(m, kSize, axis_tap<false>(gy, kSize),
                                       axis_tap<false>(gx, kSize)) == o[p];
    }
    return fused_hits >= plain_hits;
  }();
  return fused;
}

// Taps for image pixels [begin, end) along an axis where the box spans [lo, hi] and the mask has
// `mask_size` cells. C is the box dtype (Detectron2 computes the grid in it), M the mask dtype.
template <bool kFused, typename M, typename C>
std::vector<AxisTap<M>> pixel_taps(int64_t begin, int64_t end, C lo, C hi, int64_t mask_size) {
  std::vector<AxisTap<M>> taps;
  taps.reserve(end - begin);
  for (int64_t p = begin; p < end; ++p)
    taps.push_back(pixel_tap<kFused, M, C>(p, lo, hi, mask_size));
  return taps;
}

// Pixel range [begin, end) that Detectron2 samples along one axis for box side [lo, hi]:
// floor(lo) - 1 clamped at 0 to ceil(hi) + 1 clamped at the image size. Empty when begin >= end
// (a box entirely outside the image, where Detectron2 itself fails) or a coordinate is NaN.
template <typename C>
std::pair<int64_t, int64_t> pixel_range(C lo, C hi, int64_t image_size) {
  const C begin = std::max(std::floor(lo) - 1, C(0));
  const C end = std::min(std::ceil(hi) + 1, static_cast<C>(image_size));
  if (!(begin < end)) return {0, 0};
  return {static_cast<int64_t>(begin), static_cast<int64_t>(end)};
}

template <bool kFused, typename M, typename C>
void paste_one(const M* mask, int64_t mask_h, int64_t mask_w, const C* box, int64_t image_h,
               int64_t image_w, M threshold, bool* out) {
  const auto [x_begin, x_end] = pixel_range(box[0], box[2], image_w);
  const auto [y_begin, y_end] = pixel_range(box[1], box[3], image_h);
  if (x_begin >= x_end || y_begin >= y_end) return;
  const auto cols = pixel_taps<kFused, M, C>(x_begin, x_end, box[0], box[2], mask_w);
  const auto rows = pixel_taps<kFused, M, C>(y_begin, y_end, box[1], box[3], mask_h);
  for (int64_t r = 0; r < y_end - y_begin; ++r) {
    bool* out_row = out + (y_begin + r) * image_w + x_begin;
    for (int64_t c = 0; c < x_end - x_begin; ++c) {
      out_row[c] = interpolate<kFused>(mask, mask_w, rows[r], cols[c]) >= threshold;
    }
  }
}

template <typename M, typename C>
void paste_all(const at::Tensor& masks, const at::Tensor& boxes, double threshold,
               at::Tensor& out) {
  const int64_t n = masks.size(0), mask_h = masks.size(1), mask_w = masks.size(2);
  const int64_t image_h = out.size(1), image_w = out.size(2);
  const M* m = masks.data_ptr<M>();
  const C* b = boxes.data_ptr<C>();
  bool* o = out.data_ptr<bool>();
  const M thr = static_cast<M>(threshold);
  const bool fused = grid_sample_fuses();
  at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const M* mask = m + i * mask_h * mask_w;
      bool* image = o + i * image_h * image_w;
      if (fused) {
        paste_one<true, M, C>(mask, mask_h, mask_w, b + 4 * i, image_h, image_w, thr, image);
      } else {
        paste_one<false, M, C>(mask, mask_h, mask_w, b + 4 * i, image_h, image_w, thr, image);
      }
    }
  });
}

at::Tensor paste_masks_kernel(const at::Tensor& masks, const at::Tensor& boxes,
                              int64_t image_height, int64_t image_width, double threshold) {
  check_paste_masks_arguments(masks, boxes, image_height, image_width, threshold);
  const int64_t n = masks.size(0);
  at::Tensor out = at::zeros({n, image_height, image_width}, masks.options().dtype(at::kBool));
  if (out.numel() == 0) return out;
  const bool mask_double = masks.scalar_type() == at::kDouble;
  const at::Tensor m = (mask_double ? masks : masks.to(at::kFloat)).contiguous();
  const bool box_double = boxes.scalar_type() == at::kDouble;
  const at::Tensor b = (box_double ? boxes : boxes.to(at::kFloat)).contiguous();
  AT_DISPATCH_FLOATING_TYPES(m.scalar_type(), "paste_masks_in_image", [&] {
    if (box_double) {
      paste_all<scalar_t, double>(m, b, threshold, out);
    } else {
      paste_all<scalar_t, float>(m, b, threshold, out);
    }
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, CPU, m) { m.impl("paste_masks_in_image", TORCH_FN(paste_masks_kernel)); }

}  // namespace detkit::ops
