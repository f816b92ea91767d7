// CPU kernels of detkit::deform_conv2d and detkit::_deform_conv2d_backward.
//
// One image at a time. Where each tap samples each output pixel (four corners and a fractional
// position, DeformSample) is worked out once per offset group and shared by the group's channels.
// Forward gathers the (C * kh * kw, oh * ow) matrix of (masked) samples, the "columns", and
// multiplies each weight group's (O / groups, C / groups * kh * kw) slice with its block of rows
// (torch's BLAS). Backward multiplies the weight's transpose with the output gradient (the
// columns' gradient), scatters that into the input through the bilinear weights, and contracts it
// with the samples (mask gradient) and with their slopes along y and x (offset gradient); the
// weight gradient is the output gradient times the columns' transpose, the bias gradient its sum.
// Threads split channels (gathering, scattering) or (offset group, tap) rows (offset and mask
// gradients): each element is written by one thread in a fixed order, without atomics, so these
// steps give the same bits on any thread count (the matrix products are BLAS's).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include "detkit/ops/checks.h"
#include "detkit/ops/cuda/deform_conv_math.h"

namespace detkit::ops {
namespace {

using cuda_math::bilinear_weights;
using cuda_math::corner_values;
using cuda_math::DeformSample;
using cuda_math::locate_sample;
using cuda_math::Quad;
using cuda_math::sample_value;
using cuda_math::slope_x;
using cuda_math::slope_y;

bool present(const c10::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

// Items per parallel_for chunk when each item costs about `work`.
int64_t grain_for(int64_t work) { return std::max<int64_t>(1, at::internal::GRAIN_SIZE / work); }

// One image's samples: samples[(g * taps + k) * P + p] is where tap k of offset group g samples
// output pixel p. offset: the image's (offset_groups * 2 * taps, P) displacements.
template <typename T>
void locate_samples(const DeformConvShape& s, const T* offset,
                    std::vector<DeformSample<T>>& samples) {
  const int64_t taps = s.taps(), P = s.positions();
  at::parallel_for(0, s.offset_groups * taps, grain_for(P), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t i = row % taps / s.kernel_w, j = row % taps % s.kernel_w;
      const T* dy = offset + 2 * row * P;  // channel g * 2 * taps + 2 * k
      const T* dx = dy + P;
      DeformSample<T>* out = samples.data() + row * P;
      for (int64_t oy = 0; oy < s.out_h; ++oy) {
        for (int64_t ox = 0; ox < s.out_w; ++ox) {
          const int64_t p = oy * s.out_w + ox;
          const T y = static_cast<T>(oy * s.stride_h - s.pad_h + i * s.dilation_h) + dy[p];
          const T x = static_cast<T>(ox * s.stride_w - s.pad_w + j * s.dilation_w) + dx[p];
          out[p] = locate_sample(y, x, s.height, s.width);
        }
      }
    }
  });
}

// columns (C * taps, P) of one image: row c * taps + k is channel c sampled by tap k, times the
// tap's mask. input: (C, H, W); mask: (offset_groups * taps, P) or null.
template <typename T>
void gather_columns(const DeformConvShape& s, const T* input, const T* mask,
                    const std::vector<DeformSample<T>>& samples, T* columns) {
  const int64_t taps = s.taps(), P = s.positions(), plane = s.height * s.width;
  at::parallel_for(0, s.channels, grain_for(taps * P), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t first_row = c / s.channels_per_offset_group() * taps;
      for (int64_t k = 0; k < taps; ++k) {
        const DeformSample<T>* sample = samples.data() + (first_row + k) * P;
        const T* m = mask ? mask + (first_row + k) * P : nullptr;
        T* column = columns + (c * taps + k) * P;
        for (int64_t p = 0; p < P; ++p) {
          const T v = sample_value(corner_values(input + c * plane, sample[p]), sample[p]);
          column[p] = m ? m[p] * v : v;
        }
      }
    }
  });
}

// grad_input (C, H, W) of one image += the columns' gradient spread over each sample's corners.
template <typename T>
void scatter_columns(const DeformConvShape& s, const T* grad_columns, const T* mask,
                     const std::vector<DeformSample<T>>& samples, T* grad_input) {
  const int64_t taps = s.taps(), P = s.positions(), plane = s.height * s.width;
  at::parallel_for(0, s.channels, grain_for(taps * P), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t first_row = c / s.channels_per_offset_group() * taps;
      T* grad_plane = grad_input + c * plane;
      for (int64_t k = 0; k < taps; ++k) {
        const DeformSample<T>* sample = samples.data() + (first_row + k) * P;
        const T* m = mask ? mask + (first_row + k) * P : nullptr;
        const T* grad_column = grad_columns + (c * taps + k) * P;
        for (int64_t p = 0; p < P; ++p) {
          const T g = m ? m[p] * grad_column[p] : grad_column[p];
          const Quad<T> w = bilinear_weights(sample[p]);
          for (int q = 0; q < 4; ++q)
            if (sample[p].corner[q] >= 0) grad_plane[sample[p].corner[q]] += w[q] * g;
        }
      }
    }
  });
}

// One image's offset gradient (offset_groups * 2 * taps, P) and mask gradient
// (offset_groups * taps, P), either null when not wanted; both start at zero.
template <typename T>
void coordinate_gradients(const DeformConvShape& s, const T* input, const T* mask,
                          const std::vector<DeformSample<T>>& samples, const T* grad_columns,
                          T* grad_offset, T* grad_mask) {
  const int64_t taps = s.taps(), P = s.positions(), plane = s.height * s.width;
  const int64_t group_channels = s.channels_per_offset_group();
  const int64_t grain = grain_for(group_channels * P);
  at::parallel_for(0, s.offset_groups * taps, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {  // row = g * taps + k
      const int64_t first_channel = row / taps * group_channels, k = row % taps;
      const DeformSample<T>* sample = samples.data() + row * P;
      T* gy = grad_offset ? grad_offset + 2 * row * P : nullptr;
      T* gx = grad_offset ? gy + P : nullptr;
      T* gm = grad_mask ? grad_mask + row * P : nullptr;
      for (int64_t c = first_channel; c < first_channel + group_channels; ++c) {
        const T* grad_column = grad_columns + (c * taps + k) * P;
        for (int64_t p = 0; p < P; ++p) {
          const Quad<T> v = corner_values(input + c * plane, sample[p]);
          if (gy) {
            gy[p] += grad_column[p] * slope_y(v, sample[p]);
            gx[p] += grad_column[p] * slope_x(v, sample[p]);
          }
          if (gm) gm[p] += grad_column[p] * sample_value(v, sample[p]);
        }
      }
      if (gy && mask) {
        const T* m = mask + row * P;
        for (int64_t p = 0; p < P; ++p) gy[p] *= m[p], gx[p] *= m[p];
      }
    }
  });
}

// Image n of a contiguous (N, ...) tensor; null for an undefined one.
template <typename T>
T* image_of(const at::Tensor& t, int64_t n) {
  return t.defined() ? t.data_ptr<T>() + n * (t.numel() / t.size(0)) : nullptr;
}

at::Tensor deform_conv2d_forward_kernel(const at::Tensor& input, const at::Tensor& weight,
                                        const at::Tensor& offset,
                                        const c10::optional<at::Tensor>& mask,
                                        const c10::optional<at::Tensor>& bias, int64_t stride_h,
                                        int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                        int64_t dilation_h, int64_t dilation_w, int64_t groups,
                                        int64_t offset_groups) {
  const DeformConvShape s =
      check_deform_conv2d("deform_conv2d", input, weight, offset, mask, bias, stride_h, stride_w,
                          pad_h, pad_w, dilation_h, dilation_w, groups, offset_groups);
  at::Tensor output = at::empty({s.batch, s.out_channels, s.out_h, s.out_w}, input.options());
  if (s.batch == 0) return output;
  const at::Tensor x = input.contiguous(), off = offset.contiguous();
  const at::Tensor m = present(mask) ? mask->contiguous() : at::Tensor();
  // Weight group g, (O / groups, C / groups * taps), multiplies block g of the columns' rows.
  const at::Tensor w =
      weight.contiguous().view({groups, s.out_channels / groups, s.rows_per_group()});
  at::Tensor columns = at::empty({groups, s.rows_per_group(), s.positions()}, input.options());
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "deform_conv2d", [&] {
    std::vector<DeformSample<scalar_t>> samples(s.offset_groups * s.taps() * s.positions());
    for (int64_t n = 0; n < s.batch; ++n) {
      locate_samples(s, image_of<scalar_t>(off, n), samples);
      gather_columns(s, image_of<scalar_t>(x, n), image_of<scalar_t>(m, n), samples,
                     columns.data_ptr<scalar_t>());
      const at::Tensor out = output[n].view({groups, s.out_channels / groups, s.positions()});
      for (int64_t g = 0; g < groups; ++g) {
        at::Tensor out_g = out[g];
        at::mm_out(out_g, w[g], columns[g]);
      }
    }
  });
  if (present(bias)) output.add_(bias->view({1, s.out_channels, 1, 1}));
  return output;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>
deform_conv2d_backward_kernel(const at::Tensor& grad, const at::Tensor& input,
                              const at::Tensor& weight, const at::Tensor& offset,
                              const c10::optional<at::Tensor>& mask, int64_t stride_h,
                              int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h,
                              int64_t dilation_w, int64_t groups, int64_t offset_groups,
                              std::array<bool, 5> output_mask) {
  const char* op = "_deform_conv2d_backward";
  const DeformConvShape s =
      check_deform_conv2d(op, input, weight, offset, mask, c10::nullopt, stride_h, stride_w, pad_h,
                          pad_w, dilation_h, dilation_w, groups, offset_groups);
  check_deform_conv2d_grad(op, grad, input, s);
  auto zeros_if = [](bool wanted, const at::Tensor& like) {
    return wanted ? at::zeros(like.sizes(), like.options()) : at::Tensor();
  };
  at::Tensor grad_input = zeros_if(output_mask[0], input);
  at::Tensor grad_weight = zeros_if(output_mask[1], weight);
  at::Tensor grad_offset = zeros_if(output_mask[2], offset);
  at::Tensor grad_mask = present(mask) ? zeros_if(output_mask[3], *mask) : at::Tensor();
  at::Tensor grad_bias = output_mask[4] ? grad.sum({0, 2, 3}) : at::Tensor();
  const bool columns_grad_wanted =
      grad_input.defined() || grad_offset.defined() || grad_mask.defined();
  if (s.batch == 0 || !(columns_grad_wanted || grad_weight.defined()))
    return {grad_input, grad_weight, grad_offset, grad_mask, grad_bias};

  const at::Tensor go = grad.contiguous(), x = input.contiguous(), off = offset.contiguous();
  const at::Tensor m = present(mask) ? mask->contiguous() : at::Tensor();
  const int64_t group_out = s.out_channels / groups;
  const at::Tensor w = weight.contiguous().view({groups, group_out, s.rows_per_group()});
  const at::Tensor gw = grad_weight.defined()
                            ? grad_weight.view({groups, group_out, s.rows_per_group()})
                            : at::Tensor();
  // Holds the columns' gradient, then the columns themselves for the weight's gradient.
  at::Tensor buffer = at::empty({groups, s.rows_per_group(), s.positions()}, input.options());
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "_deform_conv2d_backward", [&] {
    std::vector<DeformSample<scalar_t>> samples(s.offset_groups * s.taps() * s.positions());
    scalar_t* columns = buffer.data_ptr<scalar_t>();
    for (int64_t n = 0; n < s.batch; ++n) {
      locate_samples(s, image_of<scalar_t>(off, n), samples);
      const at::Tensor go_n = go[n].view({groups, group_out, s.positions()});
      if (columns_grad_wanted) {
        for (int64_t g = 0; g < groups; ++g) {
          at::Tensor columns_g = buffer[g];
          at::mm_out(columns_g, w[g].t(), go_n[g]);
        }
        if (grad_input.defined())
          scatter_columns(s, columns, image_of<scalar_t>(m, n), samples,
                          image_of<scalar_t>(grad_input, n));
        if (grad_offset.defined() || grad_mask.defined())
          coordinate_gradients(s, image_of<scalar_t>(x, n), image_of<scalar_t>(m, n), samples,
                               columns, image_of<scalar_t>(grad_offset, n),
                               image_of<scalar_t>(grad_mask, n));
      }
      if (gw.defined()) {
        gather_columns(s, image_of<scalar_t>(x, n), image_of<scalar_t>(m, n), samples, columns);
        for (int64_t g = 0; g < groups; ++g) gw[g].addmm_(go_n[g], buffer[g].t());
      }
    }
  });
  return {grad_input, grad_weight, grad_offset, grad_mask, grad_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, CPU, m) {
  m.impl("deform_conv2d", TORCH_FN(deform_conv2d_forward_kernel));
  m.impl("_deform_conv2d_backward", TORCH_FN(deform_conv2d_backward_kernel));
}

}  // namespace detkit::ops
