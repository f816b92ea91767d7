#pragma once
// The per-element arithmetic of detkit's CUDA ROIAlign kernels (cuda/roi_align_kernel.cu): one
// output bin's mean of bilinear samples, and the weights its gradient spreads over the map.
// Written once for host and device, so the host compiler can check it against the CPU kernel on a
// machine without a GPU (tests/ops/test_cuda_math.cpp); the sample positions and the
// summation order are the CPU kernel's (cpu/roi_align_kernel.cpp).
#include <cmath>
#include <cstdint>

#include "detkit/ops/cuda/host_device.h"

namespace detkit::ops::cuda_math {

// Sampling geometry of one roi (K, 5) row: bins of bin_h x bin_w map pixels from
// (start_h, start_w), each the mean of grid_h x grid_w samples (count = their number, >= 1).
// `valid` is false for a batch index outside [0, batch_size) or a non-finite corner: the CUDA
// kernels give such a roi zeros (and no gradient) instead of reading outside the map; the CPU
// kernel rejects it with an error, which on a GPU would cost a host synchronisation per call.
template <typename T>
struct RoiGeometry {
  int64_t batch;
  T start_h, start_w, bin_h, bin_w;
  int64_t grid_h, grid_w;
  T count;
  bool valid;
};

template <typename T>
DETKIT_HOST_DEVICE RoiGeometry<T> roi_geometry(const T* roi, T spatial_scale, int64_t pooled_height,
                                               int64_t pooled_width, int64_t sampling_ratio,
                                               bool aligned, int64_t batch_size) {
  RoiGeometry<T> g;
  const T offset = aligned ? T(0.5) : T(0);
  g.valid = roi[0] >= T(0) && roi[0] < static_cast<T>(batch_size) && std::isfinite(roi[1]) &&
            std::isfinite(roi[2]) && std::isfinite(roi[3]) && std::isfinite(roi[4]);
  g.batch = g.valid ? static_cast<int64_t>(roi[0]) : 0;
  g.start_w = roi[1] * spatial_scale - offset;
  g.start_h = roi[2] * spatial_scale - offset;
  T roi_width = roi[3] * spatial_scale - offset - g.start_w;
  T roi_height = roi[4] * spatial_scale - offset - g.start_h;
  if (!aligned) {  // legacy ROIAlign: degenerate boxes become 1x1
    roi_width = roi_width > T(1) ? roi_width : T(1);
    roi_height = roi_height > T(1) ? roi_height : T(1);
  }
  g.bin_h = roi_height / static_cast<T>(pooled_height);
  g.bin_w = roi_width / static_cast<T>(pooled_width);
  int64_t grid_h = sampling_ratio;
  int64_t grid_w = sampling_ratio;
  if (sampling_ratio <= 0 && g.valid) {
    grid_h = static_cast<int64_t>(std::ceil(roi_height / static_cast<T>(pooled_height)));
    grid_w = static_cast<int64_t>(std::ceil(roi_width / static_cast<T>(pooled_width)));
  }
  g.grid_h = grid_h > 0 ? grid_h : 0;  // an inverted aligned box samples nothing
  g.grid_w = grid_w > 0 ? grid_w : 0;
  const int64_t samples = g.grid_h * g.grid_w;
  g.count = static_cast<T>(samples > 1 ? samples : 1);
  return g;
}

// One bilinear sample of an H x W plane: the offsets of its four neighbours and their weights;
// a sample outside the map (or at a NaN position) has weights 0.
template <typename T>
struct Sample {
  int64_t pos1, pos2, pos3, pos4;
  T w1, w2, w3, w4;
  DETKIT_HOST_DEVICE bool outside() const { return w1 == 0 && w2 == 0 && w3 == 0 && w4 == 0; }
};

template <typename T>
DETKIT_HOST_DEVICE Sample<T> bilinear_sample(int64_t height, int64_t width, T y, T x) {
  Sample<T> s{0, 0, 0, 0, T(0), T(0), T(0), T(0)};
  if (!(y >= T(-1) && y <= static_cast<T>(height) && x >= T(-1) && x <= static_cast<T>(width))) {
    return s;
  }
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int64_t y_low = static_cast<int64_t>(y);
  int64_t x_low = static_cast<int64_t>(x);
  int64_t y_high = y_low + 1;
  int64_t x_high = x_low + 1;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<T>(y_low);
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<T>(x_low);
  }
  const T ly = y - static_cast<T>(y_low), lx = x - static_cast<T>(x_low);
  const T hy = T(1) - ly, hx = T(1) - lx;
  s.pos1 = y_low * width + x_low;
  s.pos2 = y_low * width + x_high;
  s.pos3 = y_high * width + x_low;
  s.pos4 = y_high * width + x_high;
  s.w1 = hy * hx;
  s.w2 = hy * lx;
  s.w3 = ly * hx;
  s.w4 = ly * lx;
  return s;
}

// The position of sample (iy, ix) of bin (ph, pw), as the CPU kernel computes it.
template <typename T>
DETKIT_HOST_DEVICE T sample_y(const RoiGeometry<T>& g, int64_t ph, int64_t iy) {
  return g.start_h + static_cast<T>(ph) * g.bin_h +
         static_cast<T>(iy + .5f) * g.bin_h / static_cast<T>(g.grid_h);
}
template <typename T>
DETKIT_HOST_DEVICE T sample_x(const RoiGeometry<T>& g, int64_t pw, int64_t ix) {
  return g.start_w + static_cast<T>(pw) * g.bin_w +
         static_cast<T>(ix + .5f) * g.bin_w / static_cast<T>(g.grid_w);
}

// Bin (ph, pw) of one roi over one channel's plane (H x W, contiguous): the mean of its samples.
template <typename T>
DETKIT_HOST_DEVICE T pooled_bin(const T* plane, int64_t height, int64_t width,
                                const RoiGeometry<T>& g, int64_t ph, int64_t pw) {
  if (!g.valid) return T(0);
  T sum = T(0);
  for (int64_t iy = 0; iy < g.grid_h; ++iy) {
    const T y = sample_y(g, ph, iy);
    for (int64_t ix = 0; ix < g.grid_w; ++ix) {
      const Sample<T> s = bilinear_sample(height, width, y, sample_x(g, pw, ix));
      sum +=
          s.w1 * plane[s.pos1] + s.w2 * plane[s.pos2] + s.w3 * plane[s.pos3] + s.w4 * plane[s.pos4];
    }
  }
  return sum / g.count;
}

// The gradient of bin (ph, pw) spread over one channel's plane: add(pos, value) for each of its
// samples' neighbours inside the map (the device kernel adds atomically).
template <typename T, typename Add>
DETKIT_HOST_DEVICE void spread_bin_gradient(T grad, int64_t height, int64_t width,
                                            const RoiGeometry<T>& g, int64_t ph, int64_t pw,
                                            Add&& add) {
  if (!g.valid) return;
  for (int64_t iy = 0; iy < g.grid_h; ++iy) {
    const T y = sample_y(g, ph, iy);
    for (int64_t ix = 0; ix < g.grid_w; ++ix) {
      const Sample<T> s = bilinear_sample(height, width, y, sample_x(g, pw, ix));
      if (s.outside()) continue;
      add(s.pos1, grad * s.w1 / g.count);
      add(s.pos2, grad * s.w2 / g.count);
      add(s.pos3, grad * s.w3 / g.count);
      add(s.pos4, grad * s.w4 / g.count);
    }
  }
}

}  // namespace detkit::ops::cuda_math
