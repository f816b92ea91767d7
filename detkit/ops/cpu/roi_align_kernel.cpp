// CPU kernels of detkit::roi_align and detkit::_roi_align_backward.
//
// Arithmetic follows torchvision's CPU kernel expression by expression (same sample positions,
// same summation order), so results match it to the last bit. Forward is parallel over rois;
// backward is parallel over blocks of channels: a channel's gradient is written by one thread
// only, in the same order as a sequential loop, so there are no races and the result does not
// depend on the thread count.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "detkit/ops/checks.h"
#include "detkit/ops/cpu/channel_loops.h"

namespace detkit::ops {
namespace {

// One bilinear sample: offsets of its four neighbours in an H*W plane and their weights. A sample
// outside the map has offsets 0 and weights 0; one inside always has a weight >= 1/4.
template <typename T>
struct Sample {
  int32_t pos1, pos2, pos3, pos4;
  T w1, w2, w3, w4;
  bool outside() const { return w1 == 0 && w2 == 0 && w3 == 0 && w4 == 0; }
};

// Sampling geometry of one roi: bins of bin_h x bin_w map pixels from (start_h, start_w), each
// averaged over grid_h x grid_w samples (count = their number, at least 1).
template <typename T>
struct RoiGeometry {
  int64_t batch;
  T start_h, start_w, bin_h, bin_w;
  int64_t grid_h, grid_w;
  T count;
};

struct PoolSettings {
  double spatial_scale;
  int64_t pooled_height, pooled_width, sampling_ratio;
  bool aligned;
};

template <typename T>
RoiGeometry<T> roi_geometry(const T* roi, const PoolSettings& s) {
  const T scale = static_cast<T>(s.spatial_scale);
  const T offset = s.aligned ? T(0.5) : T(0);
  RoiGeometry<T> g;
  g.batch = static_cast<int64_t>(roi[0]);
  g.start_w = roi[1] * scale - offset;
  g.start_h = roi[2] * scale - offset;
  T roi_width = roi[3] * scale - offset - g.start_w;
  T roi_height = roi[4] * scale - offset - g.start_h;
  if (!s.aligned) {  // legacy ROIAlign: degenerate boxes become 1x1
    roi_width = std::max(roi_width, T(1));
    roi_height = std::max(roi_height, T(1));
  }
  g.bin_h = roi_height / static_cast<T>(s.pooled_height);
  g.bin_w = roi_width / static_cast<T>(s.pooled_width);
  const int64_t grid_h = s.sampling_ratio > 0
                             ? s.sampling_ratio
                             : static_cast<int64_t>(std::ceil(roi_height / s.pooled_height));
  const int64_t grid_w = s.sampling_ratio > 0
                             ? s.sampling_ratio
                             : static_cast<int64_t>(std::ceil(roi_width / s.pooled_width));
  g.grid_h = std::max<int64_t>(grid_h, 0);  // an inverted aligned box samples nothing
  g.grid_w = std::max<int64_t>(grid_w, 0);
  g.count = static_cast<T>(std::max<int64_t>(g.grid_h * g.grid_w, 1));
  return g;
}

template <typename T>
Sample<T> bilinear_sample(int64_t height, int64_t width, T y, T x) {
  if (!(y >= -1.0 && y <= height && x >= -1.0 && x <= width)) {  // also catches NaN
    return {0, 0, 0, 0, T(0), T(0), T(0), T(0)};
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
  const T ly = y - y_low, lx = x - x_low;
  const T hy = T(1) - ly, hx = T(1) - lx;
  auto offset = [width](int64_t row, int64_t col) {
    return static_cast<int32_t>(row * width + col);
  };
  return {offset(y_low, x_low),
          offset(y_low, x_high),
          offset(y_high, x_low),
          offset(y_high, x_high),
          hy * hx,
          hy * lx,
          ly * hx,
          ly * lx};
}

// All samples of one roi in (ph, pw, iy, ix) order; shared by every channel.
template <typename T>
void roi_samples(const RoiGeometry<T>& g, const PoolSettings& s, int64_t height, int64_t width,
                 std::vector<Sample<T>>& out) {
  out.clear();
  out.reserve(s.pooled_height * s.pooled_width * g.grid_h * g.grid_w);
  for (int64_t ph = 0; ph < s.pooled_height; ++ph) {
    for (int64_t pw = 0; pw < s.pooled_width; ++pw) {
      for (int64_t iy = 0; iy < g.grid_h; ++iy) {
        const T y = g.start_h + ph * g.bin_h +
                    static_cast<T>(iy + .5f) * g.bin_h / static_cast<T>(g.grid_h);
        for (int64_t ix = 0; ix < g.grid_w; ++ix) {
          const T x = g.start_w + pw * g.bin_w +
                      static_cast<T>(ix + .5f) * g.bin_w / static_cast<T>(g.grid_w);
          out.push_back(bilinear_sample(height, width, y, x));
        }
      }
    }
  }
}

// Both kernels work on the feature map with channels innermost ((N, H, W, C), a transposed
// copy): a sample's four neighbours are then four contiguous channel vectors, and the loops over
// channels vectorise (cpu/channel_loops.cpp). Each output or gradient element still sees exactly
// the scalar kernel's operations in the scalar kernel's order, so the results are bit-identical.

// Runs fn(n, begin, end) over ranges [begin, end) of the H*W pixels of each image n, in parallel.
template <typename Fn>
void for_pixel_ranges(int64_t batch, int64_t pixels, const Fn& fn) {
  constexpr int64_t kGrain = 256;  // pixels per task: a few hundred KB of a 256-channel map
  const int64_t chunks = (pixels + kGrain - 1) / kGrain;
  at::parallel_for(0, batch * chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / chunks, p0 = (t % chunks) * kGrain;
      fn(n, p0, std::min(p0 + kGrain, pixels));
    }
  });
}

// (N, C, H, W) as a contiguous (N, H, W, C) tensor: a view when the map is already stored
// channels-last, else a tiled transposed copy.
template <typename T>
at::Tensor channels_innermost(const at::Tensor& input) {
  const at::Tensor view = input.permute({0, 2, 3, 1});
  if (view.is_contiguous()) return view;
  const at::Tensor src = input.contiguous();
  const int64_t channels = src.size(1), pixels = src.size(2) * src.size(3);
  at::Tensor nhwc = at::empty(view.sizes(), src.options());
  const T* in = src.data_ptr<T>();
  T* out = nhwc.data_ptr<T>();
  for_pixel_ranges(src.size(0), pixels, [&](int64_t n, int64_t p0, int64_t p1) {
    const int64_t image = n * channels * pixels;
    cpu::transpose(in + image + p0, pixels, out + image + p0 * channels, channels, channels,
                   p1 - p0);
  });
  return nhwc;
}

// out (N, C, H, W), contiguous = nhwc (N, H, W, C), contiguous, in the other layout.
template <typename T>
void copy_channels_first(const at::Tensor& nhwc, at::Tensor& out) {
  const int64_t channels = out.size(1), pixels = out.size(2) * out.size(3);
  const T* in = nhwc.data_ptr<T>();
  T* dst = out.data_ptr<T>();
  for_pixel_ranges(out.size(0), pixels, [&](int64_t n, int64_t p0, int64_t p1) {
    const int64_t image = n * channels * pixels;
    cpu::transpose(in + image + p0 * channels, channels, dst + image + p0, pixels, p1 - p0,
                   channels);
  });
}

// Pools rois (K, 5) from input into rows of output: row rows[k] for roi k (rows = nullptr: row k).
template <typename T>
void forward_impl(const at::Tensor& input, const at::Tensor& rois, const int64_t* rows,
                  const PoolSettings& s, at::Tensor& output) {
  const int64_t channels = input.size(1), height = input.size(2), width = input.size(3);
  const int64_t num_rois = rois.size(0);
  const int64_t bins = s.pooled_height * s.pooled_width;
  const at::Tensor nhwc = channels_innermost<T>(input);
  const T* in = nhwc.data_ptr<T>();
  const T* roi_data = rois.data_ptr<T>();
  T* out = output.data_ptr<T>();
  at::parallel_for(0, num_rois, 1, [&](int64_t begin, int64_t end) {
    std::vector<Sample<T>> samples;
    std::vector<T> sums(bins * channels);  // (bin, channel) of one roi
    for (int64_t k = begin; k < end; ++k) {
      const RoiGeometry<T> g = roi_geometry(roi_data + k * 5, s);
      roi_samples(g, s, height, width, samples);
      const T* image = in + g.batch * height * width * channels;
      const int64_t per_bin = g.grid_h * g.grid_w;
      const Sample<T>* p = samples.data();
      for (int64_t b = 0; b < bins; ++b) {
        T* sum = sums.data() + b * channels;
        std::fill(sum, sum + channels, T(0));
        for (int64_t i = 0; i < per_bin; ++i, ++p) {
          cpu::add_bilinear(sum, image + int64_t{p->pos1} * channels,
                            image + int64_t{p->pos2} * channels,
                            image + int64_t{p->pos3} * channels,
                            image + int64_t{p->pos4} * channels, p->w1, p->w2, p->w3, p->w4,
                            channels);
        }
      }
      T* out_roi = out + (rows ? rows[k] : k) * channels * bins;
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t b = 0; b < bins; ++b) out_roi[c * bins + b] = sums[b * channels + c] / g.count;
    }
  });
}

// The gradient of forward_impl with respect to its input: roi k's gradient is row rows[k] of grad
// (rows = nullptr: row k). grad_input (N, C, H, W) may be stored NCHW or channels-last; the
// latter is accumulated in place, the former through a channels-last buffer.
template <typename T>
void backward_impl(const at::Tensor& grad, const at::Tensor& rois, const int64_t* rows,
                   const PoolSettings& s, at::Tensor& grad_input) {
  const int64_t batch_size = grad_input.size(0), channels = grad_input.size(1);
  const int64_t height = grad_input.size(2), width = grad_input.size(3);
  const int64_t num_rois = rois.size(0);
  const int64_t sn = grad.stride(0), sc = grad.stride(1), sh = grad.stride(2), sw = grad.stride(3);
  const bool in_place = grad_input.permute({0, 2, 3, 1}).is_contiguous();
  at::Tensor nhwc = in_place ? grad_input.permute({0, 2, 3, 1}).zero_()
                             : at::zeros({batch_size, height, width, channels}, grad.options());
  const T* g_out = grad.data_ptr<T>();
  const T* roi_data = rois.data_ptr<T>();
  T* g_in = nhwc.data_ptr<T>();
  // A thread owns a block of channels of every pixel: no two threads write the same element, and
  // each element receives its contributions in the sequential order.
  const int64_t threads = std::max<int64_t>(at::get_num_threads(), 1);
  const int64_t grain = std::max<int64_t>((channels + threads - 1) / threads, 1);
  at::parallel_for(0, channels, grain, [&](int64_t c_begin, int64_t c_end) {
    const int64_t n = c_end - c_begin;
    std::vector<Sample<T>> samples;
    std::vector<T> bin_grad(n);
    for (int64_t k = 0; k < num_rois; ++k) {
      const RoiGeometry<T> g = roi_geometry(roi_data + k * 5, s);
      roi_samples(g, s, height, width, samples);
      T* image = g_in + g.batch * height * width * channels + c_begin;
      const int64_t per_bin = g.grid_h * g.grid_w;
      const Sample<T>* p = samples.data();
      for (int64_t ph = 0; ph < s.pooled_height; ++ph) {
        for (int64_t pw = 0; pw < s.pooled_width; ++pw) {
          const T* src = g_out + (rows ? rows[k] : k) * sn + c_begin * sc + ph * sh + pw * sw;
          for (int64_t c = 0; c < n; ++c) bin_grad[c] = src[c * sc];
          const T* bg = bin_grad.data();
          for (int64_t i = 0; i < per_bin; ++i, ++p) {
            if (p->outside()) continue;
            // Four calls, not one loop: two neighbours can be the same pixel (at the map's edge),
            // and the scalar kernel adds them one after the other.
            cpu::add_weighted(image + int64_t{p->pos1} * channels, bg, p->w1, g.count, n);
            cpu::add_weighted(image + int64_t{p->pos2} * channels, bg, p->w2, g.count, n);
            cpu::add_weighted(image + int64_t{p->pos3} * channels, bg, p->w3, g.count, n);
            cpu::add_weighted(image + int64_t{p->pos4} * channels, bg, p->w4, g.count, n);
          }
        }
      }
    }
  });
  if (!in_place) copy_channels_first<T>(nhwc, grad_input);
}

// Checks that a feature map's pixels can be addressed by a Sample's 32-bit offsets.
void check_map_size(int64_t height, int64_t width) {
  TORCH_CHECK(height * width <= std::numeric_limits<int32_t>::max(), "roi_align: a feature map of ",
              height, "x", width, " pixels is too large");
}

// Checks rois (K, 5) and the settings for a batch of batch_size feature maps, and each roi's
// batch index and corners (read here: the kernel would read out of bounds or loop on them).
void check_rois(const at::Tensor& rois, const PoolSettings& s, int64_t batch_size) {
  check_roi_align_settings(rois, s.pooled_height, s.pooled_width, s.sampling_ratio);
  const at::Tensor r = rois.to(at::kDouble).contiguous();
  const double* v = r.data_ptr<double>();
  for (int64_t k = 0; k < rois.size(0); ++k, v += 5) {
    TORCH_CHECK(v[0] >= 0 && v[0] < batch_size, "roi_align: roi ", k, " has batch index ", v[0],
                " outside [0, ", batch_size, ")");
    TORCH_CHECK(
        std::isfinite(v[1]) && std::isfinite(v[2]) && std::isfinite(v[3]) && std::isfinite(v[4]),
        "roi_align: roi ", k, " has a non-finite corner (", v[1], ", ", v[2], ", ", v[3], ", ",
        v[4], ")");
  }
}

// Checks the gradient of a pooling of rois with `channels` channels.
void check_grad(const at::Tensor& grad, const at::Tensor& rois, int64_t channels,
                const PoolSettings& s) {
  check_roi_align_grad(grad, rois, channels, s.pooled_height, s.pooled_width);
}

at::Tensor roi_align_forward_kernel(const at::Tensor& input, const at::Tensor& rois,
                                    double spatial_scale, int64_t pooled_height,
                                    int64_t pooled_width, int64_t sampling_ratio, bool aligned) {
  check_roi_align_input(input, rois);
  const PoolSettings s{spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned};
  check_rois(rois, s, input.size(0));
  check_map_size(input.size(2), input.size(3));
  // Every element is written below (each roi's every channel and bin), so no zero fill.
  at::Tensor output =
      at::empty({rois.size(0), input.size(1), pooled_height, pooled_width}, input.options());
  if (output.numel() == 0) return output;
  if (input.numel() == 0) return output.zero_();
  const at::Tensor rois_c = rois.contiguous();
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "roi_align_forward",
                             [&] { forward_impl<scalar_t>(input, rois_c, nullptr, s, output); });
  return output;
}

at::Tensor roi_align_backward_kernel(const at::Tensor& grad, const at::Tensor& rois,
                                     double spatial_scale, int64_t pooled_height,
                                     int64_t pooled_width, int64_t batch_size, int64_t channels,
                                     int64_t height, int64_t width, int64_t sampling_ratio,
                                     bool aligned) {
  const PoolSettings s{spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned};
  check_rois(rois, s, batch_size);
  check_map_size(height, width);
  check_roi_align_input_shape(batch_size, channels, height, width);
  check_grad(grad, rois, channels, s);
  if (grad.numel() == 0 || batch_size * channels * height * width == 0)
    return at::zeros({batch_size, channels, height, width}, grad.options());
  at::Tensor grad_input = at::empty({batch_size, channels, height, width}, grad.options());
  const at::Tensor rois_c = rois.contiguous();
  AT_DISPATCH_FLOATING_TYPES(grad.scalar_type(), "roi_align_backward", [&] {
    backward_impl<scalar_t>(grad, rois_c, nullptr, s, grad_input);
  });
  return grad_input;
}

// ---- Pooling from a pyramid: each roi from the level `levels` assigns it, rows in roi order. ----

// The rois one level pools, in roi order, and the output rows they fill.
struct LevelRois {
  std::vector<int64_t> rows;
  at::Tensor rois;  // (rows.size(), 5), contiguous
};

std::vector<LevelRois> split_by_level(const at::Tensor& rois, const at::Tensor& levels,
                                      int64_t num_levels) {
  check_roi_levels(rois, levels);
  const at::Tensor lv = levels.contiguous();
  const int64_t* v = lv.data_ptr<int64_t>();
  std::vector<LevelRois> out(num_levels);
  for (int64_t k = 0; k < lv.size(0); ++k) {
    TORCH_CHECK(v[k] >= 0 && v[k] < num_levels, "multilevel_roi_align: roi ", k,
                " is assigned level ", v[k], " outside [0, ", num_levels, ")");
    out[v[k]].rows.push_back(k);
  }
  for (LevelRois& level : out)
    level.rois = rois.index_select(0, at::tensor(level.rows, at::kLong)).contiguous();
  return out;
}

at::Tensor multilevel_roi_align_forward_kernel(at::TensorList features, const at::Tensor& rois,
                                               const at::Tensor& levels,
                                               at::ArrayRef<double> spatial_scales,
                                               int64_t pooled_height, int64_t pooled_width,
                                               int64_t sampling_ratio, bool aligned) {
  check_multilevel_features(features, rois, spatial_scales);
  for (const at::Tensor& f : features) check_map_size(f.size(2), f.size(3));
  PoolSettings s{0.0, pooled_height, pooled_width, sampling_ratio, aligned};
  check_rois(rois, s, features[0].size(0));
  const std::vector<LevelRois> by_level = split_by_level(rois, levels, features.size());
  // Every row belongs to one level and is written there in full, so no zero fill.
  at::Tensor output =
      at::empty({rois.size(0), features[0].size(1), pooled_height, pooled_width}, rois.options());
  if (output.numel() == 0) return output;
  for (size_t l = 0; l < features.size(); ++l) {
    const LevelRois& level = by_level[l];
    if (level.rows.empty()) continue;
    if (features[l].numel() == 0) {
      output.index_fill_(0, at::tensor(level.rows, at::kLong), 0);
      continue;
    }
    s.spatial_scale = spatial_scales[l];
    AT_DISPATCH_FLOATING_TYPES(rois.scalar_type(), "multilevel_roi_align_forward", [&] {
      forward_impl<scalar_t>(features[l], level.rois, level.rows.data(), s, output);
    });
  }
  return output;
}

std::vector<at::Tensor> multilevel_roi_align_backward_kernel(
    const at::Tensor& grad, const at::Tensor& rois, const at::Tensor& levels,
    at::ArrayRef<double> spatial_scales, int64_t pooled_height, int64_t pooled_width,
    int64_t batch_size, int64_t channels, at::IntArrayRef heights, at::IntArrayRef widths,
    int64_t sampling_ratio, bool aligned, bool channels_last) {
  const size_t num_levels = spatial_scales.size();
  check_multilevel_grad_sizes(spatial_scales, batch_size, channels, heights, widths);
  PoolSettings s{0.0, pooled_height, pooled_width, sampling_ratio, aligned};
  check_rois(rois, s, batch_size);
  check_grad(grad, rois, channels, s);
  const std::vector<LevelRois> by_level = split_by_level(rois, levels, num_levels);
  const at::TensorOptions options = grad.options().memory_format(
      channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
  std::vector<at::Tensor> grads;
  for (size_t l = 0; l < num_levels; ++l) {
    check_map_size(heights[l], widths[l]);
    const LevelRois& level = by_level[l];
    if (level.rows.empty() || batch_size * channels * heights[l] * widths[l] == 0) {
      grads.push_back(at::empty({batch_size, channels, heights[l], widths[l]}, options).zero_());
      continue;
    }
    at::Tensor g = at::empty({batch_size, channels, heights[l], widths[l]}, options);
    s.spatial_scale = spatial_scales[l];
    AT_DISPATCH_FLOATING_TYPES(grad.scalar_type(), "multilevel_roi_align_backward", [&] {
      backward_impl<scalar_t>(grad, level.rois, level.rows.data(), s, g);
    });
    grads.push_back(g);
  }
  return grads;
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, CPU, m) {
  m.impl("roi_align", TORCH_FN(roi_align_forward_kernel));
  m.impl("_roi_align_backward", TORCH_FN(roi_align_backward_kernel));
  m.impl("multilevel_roi_align", TORCH_FN(multilevel_roi_align_forward_kernel));
  m.impl("_multilevel_roi_align_backward", TORCH_FN(multilevel_roi_align_backward_kernel));
}

}  // namespace detkit::ops
