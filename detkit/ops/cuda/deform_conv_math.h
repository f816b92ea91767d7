#pragma once
// The per-element arithmetic of deform_conv2d, shared by the CPU kernel
// (cpu/deform_conv_kernel.cpp), the CUDA kernels (cuda/deform_conv_kernel.cu) and ops.CudaMath,
// which runs the CUDA kernels' per-thread functions on the host against the CPU kernel.
//
// Layouts, per image: input (C, H, W); offset (offset_groups * 2 * taps, P) with row
// 2 * (g * taps + k) the y displacements of tap k of offset group g and the next row the x ones;
// mask (offset_groups * taps, P); the columns (C * taps, P), row c * taps + k holding channel c
// sampled by tap k (times its mask). P = out_h * out_w; taps = kernel_h * kernel_w.
#include <cmath>
#include <cstdint>

#include "detkit/ops/cuda/host_device.h"

namespace detkit::ops {

// Sizes and settings of one call (checked by check_deform_conv2d, ops/checks.h).
struct DeformConvShape {
  int64_t batch, channels, height, width;    // input
  int64_t out_channels, kernel_h, kernel_w;  // weight
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups, offset_groups;
  int64_t out_h, out_w;
  DETKIT_HOST_DEVICE int64_t taps() const { return kernel_h * kernel_w; }
  DETKIT_HOST_DEVICE int64_t positions() const { return out_h * out_w; }
  DETKIT_HOST_DEVICE int64_t channels_per_offset_group() const { return channels / offset_groups; }
  DETKIT_HOST_DEVICE int64_t rows_per_group() const { return channels / groups * taps(); }
};

namespace cuda_math {

template <typename T>
struct Quad {
  T v[4];
  DETKIT_HOST_DEVICE T& operator[](int i) { return v[i]; }
  DETKIT_HOST_DEVICE const T& operator[](int i) const { return v[i]; }
};

// Where one tap samples one output pixel: the plane offsets of the four corners around (y, x),
// -1 for a corner outside the map (it counts 0), and (y, x)'s distance to the top-left corner.
template <typename T>
struct DeformSample {
  int64_t corner[4];  // (y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)
  T ly, lx;           // y - y0, x - x0
};

template <typename T>
DETKIT_HOST_DEVICE DeformSample<T> locate_sample(T y, T x, int64_t height, int64_t width) {
  DeformSample<T> s{{-1, -1, -1, -1}, T(0), T(0)};
  // Outside [-1, H) x [-1, W) (NaN too) every corner is outside: value and slopes are 0. At
  // exactly -1 row (column) 0 keeps its corners with weight 0: the value is 0 and the slope the
  // one-sided one from inside, as torchvision computes it.
  if (!(y >= -1 && y < height && x >= -1 && x < width)) return s;
  const int64_t y0 = static_cast<int64_t>(floor(y));
  const int64_t x0 = static_cast<int64_t>(floor(x));
  s.ly = y - static_cast<T>(y0);
  s.lx = x - static_cast<T>(x0);
  const bool top = y0 >= 0, bottom = y0 + 1 < height, left = x0 >= 0, right = x0 + 1 < width;
  const int64_t at = y0 * width + x0;
  s.corner[0] = top && left ? at : -1;
  s.corner[1] = top && right ? at + 1 : -1;
  s.corner[2] = bottom && left ? at + width : -1;
  s.corner[3] = bottom && right ? at + width + 1 : -1;
  return s;
}

template <typename T>
DETKIT_HOST_DEVICE Quad<T> corner_values(const T* plane, const DeformSample<T>& s) {
  Quad<T> v;
  for (int q = 0; q < 4; ++q) v[q] = s.corner[q] >= 0 ? plane[s.corner[q]] : T(0);
  return v;
}

template <typename T>
DETKIT_HOST_DEVICE Quad<T> bilinear_weights(const DeformSample<T>& s) {
  const T hy = 1 - s.ly, hx = 1 - s.lx;
  return {{hy * hx, hy * s.lx, s.ly * hx, s.ly * s.lx}};
}

template <typename T>
DETKIT_HOST_DEVICE T sample_value(const Quad<T>& v, const DeformSample<T>& s) {
  const Quad<T> w = bilinear_weights(s);
  return w[0] * v[0] + w[1] * v[1] + w[2] * v[2] + w[3] * v[3];
}

// d sample_value / dy and d sample_value / dx.
template <typename T>
DETKIT_HOST_DEVICE T slope_y(const Quad<T>& v, const DeformSample<T>& s) {
  return (1 - s.lx) * (v[2] - v[0]) + s.lx * (v[3] - v[1]);
}
template <typename T>
DETKIT_HOST_DEVICE T slope_x(const Quad<T>& v, const DeformSample<T>& s) {
  return (1 - s.ly) * (v[1] - v[0]) + s.ly * (v[3] - v[2]);
}

// Where tap row = g * taps + k samples output pixel p, from the image's offsets.
template <typename T>
DETKIT_HOST_DEVICE DeformSample<T> sample_of(const DeformConvShape& s, const T* offset, int64_t row,
                                             int64_t p) {
  const int64_t taps = s.taps(), P = s.positions();
  const int64_t i = row % taps / s.kernel_w, j = row % taps % s.kernel_w;
  const int64_t oy = p / s.out_w, ox = p % s.out_w;
  const T y =
      static_cast<T>(oy * s.stride_h - s.pad_h + i * s.dilation_h) + offset[2 * row * P + p];
  const T x =
      static_cast<T>(ox * s.stride_w - s.pad_w + j * s.dilation_w) + offset[(2 * row + 1) * P + p];
  return locate_sample(y, x, s.height, s.width);
}

// The row of offsets and mask that channel c's tap k uses: g * taps + k.
DETKIT_HOST_DEVICE inline int64_t tap_row(const DeformConvShape& s, int64_t c, int64_t k) {
  return c / s.channels_per_offset_group() * s.taps() + k;
}

// Column (c * taps + k, p) of one image: channel c sampled by tap k at pixel p, times the mask.
template <typename T>
DETKIT_HOST_DEVICE T column_value(const DeformConvShape& s, const T* input, const T* mask,
                                  const T* offset, int64_t c, int64_t k, int64_t p) {
  const int64_t row = tap_row(s, c, k);
  const DeformSample<T> sample = sample_of(s, offset, row, p);
  const T v = sample_value(corner_values(input + c * s.height * s.width, sample), sample);
  return mask ? mask[row * s.positions() + p] * v : v;
}

// What column (c * taps + k, p)'s gradient adds to the input: `add[q]` at plane index `at[q]` of
// channel c (skipped where at[q] < 0).
template <typename T>
DETKIT_HOST_DEVICE void input_gradient(const DeformConvShape& s, const T* grad_columns,
                                       const T* mask, const T* offset, int64_t c, int64_t k,
                                       int64_t p, int64_t at[4], T add[4]) {
  const int64_t row = tap_row(s, c, k), P = s.positions();
  const DeformSample<T> sample = sample_of(s, offset, row, p);
  const T grad = grad_columns[(c * s.taps() + k) * P + p];
  const T g = mask ? mask[row * P + p] * grad : grad;
  const Quad<T> w = bilinear_weights(sample);
  for (int q = 0; q < 4; ++q) {
    at[q] = sample.corner[q];
    add[q] = w[q] * g;
  }
}

// The offset gradient (y, x) and mask gradient of tap row = g * taps + k at pixel p: the columns'
// gradient contracted over offset group g's channels, in channel order.
template <typename T>
DETKIT_HOST_DEVICE void coordinate_gradient(const DeformConvShape& s, const T* input, const T* mask,
                                            const T* offset, const T* grad_columns, int64_t row,
                                            int64_t p, T* grad_y, T* grad_x, T* grad_mask) {
  const int64_t taps = s.taps(), P = s.positions(), plane = s.height * s.width;
  const int64_t group_channels = s.channels_per_offset_group();
  const int64_t first_channel = row / taps * group_channels, k = row % taps;
  const DeformSample<T> sample = sample_of(s, offset, row, p);
  T gy = 0, gx = 0, gm = 0;
  for (int64_t c = first_channel; c < first_channel + group_channels; ++c) {
    const T grad = grad_columns[(c * taps + k) * P + p];
    const Quad<T> v = corner_values(input + c * plane, sample);
    gy += grad * slope_y(v, sample);
    gx += grad * slope_x(v, sample);
    gm += grad * sample_value(v, sample);
  }
  if (mask) {
    gy *= mask[row * P + p];
    gx *= mask[row * P + p];
  }
  *grad_y = gy;
  *grad_x = gx;
  *grad_mask = gm;
}

}  // namespace cuda_math
}  // namespace detkit::ops
