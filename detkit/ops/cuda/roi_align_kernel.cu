// CUDA kernels of detkit::roi_align, detkit::multilevel_roi_align and their backward ops.
//
// One thread per output bin (roi, channel, ph, pw) in the forward pass, reading the bin's samples
// from its roi's level; one thread per gradient bin in the backward pass, adding its share to the
// four neighbours of each sample atomically (so the summation order, and the last bits, vary from
// run to run, as in torchvision's CUDA kernel). The arithmetic per bin is the CPU kernel's
// (cuda/roi_align_math.h). No host synchronisation: rois are not read on the host, so a roi with
// a batch index outside the batch or a non-finite corner, or a level outside the pyramid, pools
// zeros (the CPU kernel names it in an error instead).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <ATen/cuda/Atomic.cuh>
#include <vector>

#include "detkit/ops/checks.h"
#include "detkit/ops/cuda/launch.h"
#include "detkit/ops/cuda/roi_align_math.h"

namespace detkit::ops {
namespace {

using cuda_math::pooled_bin;
using cuda_math::roi_geometry;
using cuda_math::RoiGeometry;
using cuda_math::spread_bin_gradient;

constexpr int kMaxLevels = 8;  // a feature pyramid's levels (Detectron2's FPN pools from 4)

// The maps rois pool from: level l is (batch, channels, height[l], width[l]), NCHW contiguous.
template <typename T>
struct Levels {
  T* data[kMaxLevels];
  int64_t height[kMaxLevels];
  int64_t width[kMaxLevels];
  T scale[kMaxLevels];
  int64_t count;
};

struct Pooling {
  int64_t num_rois, channels, pooled_height, pooled_width, sampling_ratio, batch_size;
  bool aligned;
};

// The level roi k pools from (levels == nullptr: the only one), or -1 when outside the pyramid.
__device__ inline int64_t level_of(const int64_t* levels, int64_t k, int64_t count) {
  const int64_t l = levels ? levels[k] : 0;
  return l >= 0 && l < count ? l : -1;
}

// Output element i of a (K, C, PH, PW) pooling: roi k, channel c, bin (ph, pw).
struct Bin {
  int64_t k, c, ph, pw;
};

__device__ inline Bin bin_of(int64_t i, const Pooling& p) {
  const int64_t pw = i % p.pooled_width;
  const int64_t ph = (i / p.pooled_width) % p.pooled_height;
  const int64_t c = (i / (p.pooled_width * p.pooled_height)) % p.channels;
  return {i / (p.pooled_width * p.pooled_height * p.channels), c, ph, pw};
}

template <typename T>
__global__ void forward_kernel(Levels<T> maps, const T* rois, const int64_t* levels, Pooling p,
                               T* out) {
  const int64_t total = p.num_rois * p.channels * p.pooled_height * p.pooled_width;
  for (int64_t i = cuda::first_index(); i < total; i += cuda::grid_stride()) {
    const Bin b = bin_of(i, p);
    const int64_t l = level_of(levels, b.k, maps.count);
    if (l < 0) {
      out[i] = T(0);
      continue;
    }
    const RoiGeometry<T> g =
        roi_geometry(rois + b.k * 5, maps.scale[l], p.pooled_height, p.pooled_width,
                     p.sampling_ratio, p.aligned, p.batch_size);
    const int64_t plane = maps.height[l] * maps.width[l];
    const T* map = maps.data[l] + (g.batch * p.channels + b.c) * plane;
    out[i] = pooled_bin(map, maps.height[l], maps.width[l], g, b.ph, b.pw);
  }
}

// grad (K, C, PH, PW) with any strides (autograd hands expanded gradients).
template <typename T>
__global__ void backward_kernel(const T* grad, int64_t sn, int64_t sc, int64_t sh, int64_t sw,
                                const T* rois, const int64_t* levels, Pooling p, Levels<T> grads) {
  const int64_t total = p.num_rois * p.channels * p.pooled_height * p.pooled_width;
  for (int64_t i = cuda::first_index(); i < total; i += cuda::grid_stride()) {
    const Bin b = bin_of(i, p);
    const int64_t l = level_of(levels, b.k, grads.count);
    if (l < 0 || grads.data[l] == nullptr) continue;  // outside the pyramid, or a level of 0 pixels
    const RoiGeometry<T> g =
        roi_geometry(rois + b.k * 5, grads.scale[l], p.pooled_height, p.pooled_width,
                     p.sampling_ratio, p.aligned, p.batch_size);
    const int64_t plane = grads.height[l] * grads.width[l];
    T* target = grads.data[l] + (g.batch * p.channels + b.c) * plane;
    const T value = grad[b.k * sn + b.c * sc + b.ph * sh + b.pw * sw];
    spread_bin_gradient(value, grads.height[l], grads.width[l], g, b.ph, b.pw,
                        [target](int64_t pos, T v) { gpuAtomicAdd(target + pos, v); });
  }
}

// The maps (contiguous NCHW copies where needed, kept alive by `keep`) as a kernel argument.
template <typename T>
Levels<T> levels_of(const std::vector<at::Tensor>& maps, at::ArrayRef<double> scales) {
  Levels<T> out{};
  out.count = static_cast<int64_t>(maps.size());
  for (size_t l = 0; l < maps.size(); ++l) {
    out.data[l] = maps[l].data_ptr<T>();
    out.height[l] = maps[l].size(2);
    out.width[l] = maps[l].size(3);
    out.scale[l] = static_cast<T>(scales[l]);
  }
  return out;
}

// Pools every roi from maps[levels[k]] (levels undefined: maps[0]) into a new (K, C, PH, PW).
at::Tensor pool(const std::vector<at::Tensor>& maps, const at::Tensor& rois,
                const at::Tensor& levels, at::ArrayRef<double> scales, int64_t pooled_height,
                int64_t pooled_width, int64_t sampling_ratio, bool aligned) {
  const at::Tensor& first = maps[0];
  at::Tensor output =
      at::empty({rois.size(0), first.size(1), pooled_height, pooled_width}, first.options());
  if (output.numel() == 0) return output;
  const at::Tensor rois_c = rois.contiguous();
  const Pooling p{rois.size(0),   first.size(1), pooled_height, pooled_width,
                  sampling_ratio, first.size(0), aligned};
  const int64_t* level_data = levels.defined() ? levels.data_ptr<int64_t>() : nullptr;
  AT_DISPATCH_FLOATING_TYPES(first.scalar_type(), "roi_align_forward_cuda", [&] {
    forward_kernel<scalar_t>
        <<<cuda::blocks_for(output.numel()), cuda::kThreads, 0, cuda::current_stream()>>>(
            levels_of<scalar_t>(maps, scales), rois_c.data_ptr<scalar_t>(), level_data, p,
            output.data_ptr<scalar_t>());
  });
  cuda::check_launch("roi_align");
  return output;
}

// The gradient of pool() for level maps of the given sizes, each NCHW, zeros where no roi pools.
std::vector<at::Tensor> unpool(const at::Tensor& grad, const at::Tensor& rois,
                               const at::Tensor& levels, at::ArrayRef<double> scales,
                               int64_t pooled_height, int64_t pooled_width, int64_t batch_size,
                               int64_t channels, at::IntArrayRef heights, at::IntArrayRef widths,
                               int64_t sampling_ratio, bool aligned) {
  std::vector<at::Tensor> grads;
  for (size_t l = 0; l < heights.size(); ++l) {
    grads.push_back(at::zeros({batch_size, channels, heights[l], widths[l]}, grad.options()));
  }
  if (grad.numel() == 0 || batch_size * channels == 0) return grads;
  std::vector<at::Tensor> nonempty;  // a level without pixels receives nothing
  const at::Tensor rois_c = rois.contiguous();
  const Pooling p{rois.size(0),   channels,   pooled_height, pooled_width,
                  sampling_ratio, batch_size, aligned};
  const int64_t* level_data = levels.defined() ? levels.data_ptr<int64_t>() : nullptr;
  AT_DISPATCH_FLOATING_TYPES(grad.scalar_type(), "roi_align_backward_cuda", [&] {
    Levels<scalar_t> targets = levels_of<scalar_t>(grads, scales);
    for (size_t l = 0; l < grads.size(); ++l) {
      if (grads[l].numel() == 0) targets.data[l] = nullptr;
    }
    backward_kernel<scalar_t>
        <<<cuda::blocks_for(grad.numel()), cuda::kThreads, 0, cuda::current_stream()>>>(
            grad.data_ptr<scalar_t>(), grad.stride(0), grad.stride(1), grad.stride(2),
            grad.stride(3), rois_c.data_ptr<scalar_t>(), level_data, p, targets);
  });
  cuda::check_launch("roi_align backward");
  return grads;
}

at::Tensor roi_align_forward_cuda(const at::Tensor& input, const at::Tensor& rois,
                                  double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                  int64_t sampling_ratio, bool aligned) {
  check_roi_align_input(input, rois);
  check_roi_align_settings(rois, pooled_height, pooled_width, sampling_ratio);
  const c10::cuda::CUDAGuard guard(input.device());
  if (input.numel() == 0) {
    return at::zeros({rois.size(0), input.size(1), pooled_height, pooled_width}, input.options());
  }
  const double scales[] = {spatial_scale};
  return pool({input.contiguous()}, rois, at::Tensor(), scales, pooled_height, pooled_width,
              sampling_ratio, aligned);
}

at::Tensor roi_align_backward_cuda(const at::Tensor& grad, const at::Tensor& rois,
                                   double spatial_scale, int64_t pooled_height,
                                   int64_t pooled_width, int64_t batch_size, int64_t channels,
                                   int64_t height, int64_t width, int64_t sampling_ratio,
                                   bool aligned) {
  check_roi_align_settings(rois, pooled_height, pooled_width, sampling_ratio);
  check_roi_align_input_shape(batch_size, channels, height, width);
  check_roi_align_grad(grad, rois, channels, pooled_height, pooled_width);
  const c10::cuda::CUDAGuard guard(grad.device());
  const double scales[] = {spatial_scale};
  const int64_t heights[] = {height}, widths[] = {width};
  return unpool(grad, rois, at::Tensor(), scales, pooled_height, pooled_width, batch_size, channels,
                heights, widths, sampling_ratio, aligned)[0];
}

void check_levels(const at::Tensor& rois, const at::Tensor& levels, size_t num_levels) {
  TORCH_CHECK(num_levels > 0 && num_levels <= kMaxLevels, "multilevel_roi_align: ", num_levels,
              " levels; the CUDA kernel pools from 1 to ", kMaxLevels);
  check_roi_levels(rois, levels);
}

at::Tensor multilevel_roi_align_forward_cuda(at::TensorList features, const at::Tensor& rois,
                                             const at::Tensor& levels,
                                             at::ArrayRef<double> spatial_scales,
                                             int64_t pooled_height, int64_t pooled_width,
                                             int64_t sampling_ratio, bool aligned) {
  check_multilevel_features(features, rois, spatial_scales);
  check_roi_align_settings(rois, pooled_height, pooled_width, sampling_ratio);
  check_levels(rois, levels, features.size());
  std::vector<at::Tensor> maps;
  for (const at::Tensor& f : features) {
    // A level without pixels pools zeros: give the kernel a one-pixel zero map in its place.
    maps.push_back(f.numel() == 0 ? at::zeros({f.size(0), f.size(1), 1, 1}, f.options())
                                  : f.contiguous());
  }
  const c10::cuda::CUDAGuard guard(rois.device());
  if (features[0].size(0) == 0 || features[0].size(1) == 0) {
    return at::zeros({rois.size(0), features[0].size(1), pooled_height, pooled_width},
                     rois.options());
  }
  return pool(maps, rois, levels.contiguous(), spatial_scales, pooled_height, pooled_width,
              sampling_ratio, aligned);
}

std::vector<at::Tensor> multilevel_roi_align_backward_cuda(
    const at::Tensor& grad, const at::Tensor& rois, const at::Tensor& levels,
    at::ArrayRef<double> spatial_scales, int64_t pooled_height, int64_t pooled_width,
    int64_t batch_size, int64_t channels, at::IntArrayRef heights, at::IntArrayRef widths,
    int64_t sampling_ratio, bool aligned, bool channels_last) {
  const size_t num_levels = spatial_scales.size();
  check_multilevel_grad_sizes(spatial_scales, batch_size, channels, heights, widths);
  check_roi_align_settings(rois, pooled_height, pooled_width, sampling_ratio);
  check_levels(rois, levels, num_levels);
  check_roi_align_grad(grad, rois, channels, pooled_height, pooled_width);
  const c10::cuda::CUDAGuard guard(grad.device());
  std::vector<at::Tensor> grads =
      unpool(grad, rois, levels.contiguous(), spatial_scales, pooled_height, pooled_width,
             batch_size, channels, heights, widths, sampling_ratio, aligned);
  if (channels_last) {
    for (at::Tensor& g : grads) g = g.contiguous(at::MemoryFormat::ChannelsLast);
  }
  return grads;
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, CUDA, m) {
  m.impl("roi_align", TORCH_FN(roi_align_forward_cuda));
  m.impl("_roi_align_backward", TORCH_FN(roi_align_backward_cuda));
  m.impl("multilevel_roi_align", TORCH_FN(multilevel_roi_align_forward_cuda));
  m.impl("_multilevel_roi_align_backward", TORCH_FN(multilevel_roi_align_backward_cuda));
}

}  // namespace detkit::ops
