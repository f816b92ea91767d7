#pragma once
// The arithmetic of detkit's CUDA mask pasting (cuda/paste_masks_kernel.cu), for host and
// device: one image pixel of one pasted mask, as the CPU kernel computes it
// (cpu/paste_masks_kernel.cpp): Detectron2's grid for the pixel centre, grid_sample's bilinear
// value (align_corners false, zeros outside the mask), thresholded; pixels farther than one pixel
// from the box (rounded outwards) are false. kFused rounds multiply-adds once, as grid_sample's
// vectorised kernels (and nvcc's contracted code) do; the host test checks both roundings
// against the CPU kernel (tests/ops/test_cuda_math.cpp). The CPU kernel computes its taps and
// corner sums with these same functions.
#include <cmath>
#include <cstdint>

#include "detkit/ops/cuda/host_device.h"

namespace detkit::ops::cuda_math {

template <bool kFused, typename M>
DETKIT_HOST_DEVICE inline M mul_add(M a, M b, M c) {
  if constexpr (kFused) {
    return std::fma(a, b, c);
  } else {
    return a * b + c;
  }
}

// Bilinear taps along one mask axis: the lower neighbour, the distance past it, 1 - that, and
// whether each of the two neighbours is inside the mask.
template <typename M>
struct AxisTap {
  int64_t low;
  M frac, rest;
  bool low_in, high_in;
};

// The tap at normalised grid coordinate g (-1 and 1 are the mask's outer edges) on an axis of
// `size` cells, as grid_sample(align_corners=False, padding zeros) computes it.
template <bool kFused, typename M>
DETKIT_HOST_DEVICE inline AxisTap<M> axis_tap(M g, int64_t size) {
  const M coord = mul_add<kFused>(g + M(1), static_cast<M>(size) / 2, M(-0.5));
  const M low = std::floor(coord);
  AxisTap<M> t;
  t.frac = coord - low;
  t.rest = M(1) - t.frac;
  t.low = (low > -2 && low < size) ? static_cast<int64_t>(low) : -2;  // NaN -> outside
  t.low_in = t.low > -1 && t.low < size;
  t.high_in = t.low + 1 > -1 && t.low + 1 < size;
  return t;
}

// The tap of image pixel p along an axis where the box spans [lo, hi] and the mask has `size`
// cells (C is the box dtype, in which Detectron2 computes the grid; M the mask's).
template <bool kFused, typename M, typename C>
DETKIT_HOST_DEVICE inline AxisTap<M> pixel_tap(int64_t p, C lo, C hi, int64_t size) {
  const float centre = static_cast<float>(p) + 0.5f;              // torch.arange(float32) + 0.5
  const C g = (static_cast<C>(centre) - lo) / (hi - lo) * 2 - 1;  // in [-1, 1] over the box
  return axis_tap<kFused>(static_cast<M>(g), size);
}

// Bilinear value of a mask_w-wide mask at row tap ty and column tap tx (grid_sample's corner sum).
template <bool kFused, typename M>
DETKIT_HOST_DEVICE inline M interpolate(const M* mask, int64_t mask_w, const AxisTap<M>& ty,
                                        const AxisTap<M>& tx) {
  const M nw = ty.rest * tx.rest, ne = ty.rest * tx.frac;
  const M sw = ty.frac * tx.rest, se = ty.frac * tx.frac;
  const int64_t north = ty.low * mask_w, south = north + mask_w;
  const M v_nw = ty.low_in && tx.low_in ? mask[north + tx.low] : M(0);
  const M v_ne = ty.low_in && tx.high_in ? mask[north + tx.low + 1] : M(0);
  const M v_sw = ty.high_in && tx.low_in ? mask[south + tx.low] : M(0);
  const M v_se = ty.high_in && tx.high_in ? mask[south + tx.low + 1] : M(0);
  M value = v_nw * nw;
  value = mul_add<kFused>(v_ne, ne, value);
  value = mul_add<kFused>(v_sw, sw, value);
  return mul_add<kFused>(v_se, se, value);
}

// [begin, end) of the pixels sampled along an axis for the box side [lo, hi]: floor(lo) - 1
// clamped at 0 to ceil(hi) + 1 clamped at the image size; begin >= end when none (or NaN).
template <typename C>
DETKIT_HOST_DEVICE inline bool in_pixel_range(int64_t p, C lo, C hi, int64_t image_size) {
  C begin = std::floor(lo) - 1;
  if (begin < C(0)) begin = C(0);
  C end = std::ceil(hi) + 1;
  if (end > static_cast<C>(image_size)) end = static_cast<C>(image_size);
  if (!(begin < end)) return false;
  return p >= static_cast<int64_t>(begin) && p < static_cast<int64_t>(end);
}

/// Pixel (y, x) of the mask (mask_h x mask_w) pasted into box (x1, y1, x2, y2).
template <bool kFused, typename M, typename C>
DETKIT_HOST_DEVICE inline bool pasted_pixel(const M* mask, int64_t mask_h, int64_t mask_w,
                                            const C* box, int64_t image_h, int64_t image_w,
                                            int64_t y, int64_t x, M threshold) {
  if (!in_pixel_range(x, box[0], box[2], image_w) || !in_pixel_range(y, box[1], box[3], image_h)) {
    return false;
  }
  const AxisTap<M> ty = pixel_tap<kFused, M, C>(y, box[1], box[3], mask_h);
  const AxisTap<M> tx = pixel_tap<kFused, M, C>(x, box[0], box[2], mask_w);
  return interpolate<kFused>(mask, mask_w, ty, tx) >= threshold;
}

}  // namespace detkit::ops::cuda_math
