// CUDA kernels of detkit::deform_conv2d and detkit::_deform_conv2d_backward, the CPU kernel's
// algorithm one image at a time: the columns (C * taps, P) gathered by one thread per element
// (cuda/deform_conv_math.h's column_value), multiplied by each weight group's slice with cuBLAS;
// backward, the columns' gradient (the weight's transpose times the output gradient, cuBLAS)
// spread into the input gradient with atomic adds (one thread per column element), and the
// offset and mask gradients by one thread per (offset group, tap, pixel), contracting the group's
// channels in order. The input gradient's sums are in the atomics' order: within rounding of the
// CPU kernel's, not bit for bit.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <ATen/cuda/Atomic.cuh>
#include <array>
#include <tuple>

#include "detkit/ops/checks.h"
#include "detkit/ops/cuda/deform_conv_math.h"
#include "detkit/ops/cuda/launch.h"

namespace detkit::ops {
namespace {

bool present(const c10::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

// Image n of a contiguous (N, ...) tensor; null for an undefined one.
template <typename T>
T* image_of(const at::Tensor& t, int64_t n) {
  return t.defined() ? t.data_ptr<T>() + n * (t.numel() / t.size(0)) : nullptr;
}

template <typename T>
__global__ void columns_kernel(DeformConvShape s, const T* input, const T* mask, const T* offset,
                               T* columns) {
  const int64_t taps = s.taps(), P = s.positions(), total = s.channels * taps * P;
  for (int64_t t = cuda::first_index(); t < total; t += cuda::grid_stride()) {
    const int64_t p = t % P, k = t / P % taps, c = t / (P * taps);
    columns[t] = cuda_math::column_value(s, input, mask, offset, c, k, p);
  }
}

template <typename T>
__global__ void input_gradient_kernel(DeformConvShape s, const T* grad_columns, const T* mask,
                                      const T* offset, T* grad_input) {
  const int64_t taps = s.taps(), P = s.positions(), total = s.channels * taps * P;
  const int64_t plane = s.height * s.width;
  for (int64_t t = cuda::first_index(); t < total; t += cuda::grid_stride()) {
    const int64_t p = t % P, k = t / P % taps, c = t / (P * taps);
    int64_t at[4];
    T add[4];
    cuda_math::input_gradient(s, grad_columns, mask, offset, c, k, p, at, add);
    for (int q = 0; q < 4; ++q)
      if (at[q] >= 0) gpuAtomicAdd(grad_input + c * plane + at[q], add[q]);
  }
}

template <typename T>
__global__ void coordinate_gradient_kernel(DeformConvShape s, const T* input, const T* mask,
                                           const T* offset, const T* grad_columns, T* grad_offset,
                                           T* grad_mask) {
  const int64_t P = s.positions(), total = s.offset_groups * s.taps() * P;
  for (int64_t t = cuda::first_index(); t < total; t += cuda::grid_stride()) {
    const int64_t p = t % P, row = t / P;
    T gy, gx, gm;
    cuda_math::coordinate_gradient(s, input, mask, offset, grad_columns, row, p, &gy, &gx, &gm);
    if (grad_offset) {
      grad_offset[2 * row * P + p] = gy;
      grad_offset[(2 * row + 1) * P + p] = gx;
    }
    if (grad_mask) grad_mask[row * P + p] = gm;
  }
}

template <typename T>
void gather_columns(const DeformConvShape& s, const T* input, const T* mask, const T* offset,
                    T* columns) {
  const int64_t total = s.channels * s.taps() * s.positions();
  columns_kernel<T><<<cuda::blocks_for(total), cuda::kThreads, 0, cuda::current_stream()>>>(
      s, input, mask, offset, columns);
  cuda::check_launch("deform_conv2d");
}

at::Tensor deform_conv2d_cuda(const at::Tensor& input, const at::Tensor& weight,
                              const at::Tensor& offset, const c10::optional<at::Tensor>& mask,
                              const c10::optional<at::Tensor>& bias, int64_t stride_h,
                              int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h,
                              int64_t dilation_w, int64_t groups, int64_t offset_groups) {
  const DeformConvShape s =
      check_deform_conv2d("deform_conv2d", input, weight, offset, mask, bias, stride_h, stride_w,
                          pad_h, pad_w, dilation_h, dilation_w, groups, offset_groups);
  const c10::cuda::CUDAGuard guard(input.device());
  at::Tensor output = at::empty({s.batch, s.out_channels, s.out_h, s.out_w}, input.options());
  if (s.batch == 0) return output;
  const at::Tensor x = input.contiguous(), off = offset.contiguous();
  const at::Tensor m = present(mask) ? mask->contiguous() : at::Tensor();
  const at::Tensor w =
      weight.contiguous().view({groups, s.out_channels / groups, s.rows_per_group()});
  at::Tensor columns = at::empty({groups, s.rows_per_group(), s.positions()}, input.options());
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "deform_conv2d_cuda", [&] {
    for (int64_t n = 0; n < s.batch; ++n) {
      gather_columns(s, image_of<scalar_t>(x, n), image_of<scalar_t>(m, n),
                     image_of<scalar_t>(off, n), columns.data_ptr<scalar_t>());
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

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> deform_conv2d_backward_cuda(
    const at::Tensor& grad, const at::Tensor& input, const at::Tensor& weight,
    const at::Tensor& offset, const c10::optional<at::Tensor>& mask, int64_t stride_h,
    int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
    int64_t groups, int64_t offset_groups, std::array<bool, 5> output_mask) {
  const char* op = "_deform_conv2d_backward";
  const DeformConvShape s =
      check_deform_conv2d(op, input, weight, offset, mask, c10::nullopt, stride_h, stride_w, pad_h,
                          pad_w, dilation_h, dilation_w, groups, offset_groups);
  check_deform_conv2d_grad(op, grad, input, s);
  const c10::cuda::CUDAGuard guard(input.device());
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
  at::Tensor buffer = at::empty({groups, s.rows_per_group(), s.positions()}, input.options());
  const int64_t elements = s.channels * s.taps() * s.positions();
  const int64_t tap_pixels = s.offset_groups * s.taps() * s.positions();
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "_deform_conv2d_backward_cuda", [&] {
    scalar_t* columns = buffer.data_ptr<scalar_t>();
    for (int64_t n = 0; n < s.batch; ++n) {
      const scalar_t* x_n = image_of<scalar_t>(x, n);
      const scalar_t* m_n = image_of<scalar_t>(m, n);
      const scalar_t* off_n = image_of<scalar_t>(off, n);
      const at::Tensor go_n = go[n].view({groups, group_out, s.positions()});
      if (columns_grad_wanted) {
        for (int64_t g = 0; g < groups; ++g) {
          at::Tensor columns_g = buffer[g];
          at::mm_out(columns_g, w[g].t(), go_n[g]);
        }
        if (grad_input.defined()) {
          input_gradient_kernel<scalar_t>
              <<<cuda::blocks_for(elements), cuda::kThreads, 0, cuda::current_stream()>>>(
                  s, columns, m_n, off_n, image_of<scalar_t>(grad_input, n));
          cuda::check_launch(op);
        }
        if (grad_offset.defined() || grad_mask.defined()) {
          coordinate_gradient_kernel<scalar_t>
              <<<cuda::blocks_for(tap_pixels), cuda::kThreads, 0, cuda::current_stream()>>>(
                  s, x_n, m_n, off_n, columns, image_of<scalar_t>(grad_offset, n),
                  image_of<scalar_t>(grad_mask, n));
          cuda::check_launch(op);
        }
      }
      if (gw.defined()) {
        gather_columns(s, x_n, m_n, off_n, columns);
        for (int64_t g = 0; g < groups; ++g) gw[g].addmm_(go_n[g], buffer[g].t());
      }
    }
  });
  return {grad_input, grad_weight, grad_offset, grad_mask, grad_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, CUDA, m) {
  m.impl("deform_conv2d", TORCH_FN(deform_conv2d_cuda));
  m.impl("_deform_conv2d_backward", TORCH_FN(deform_conv2d_backward_cuda));
}

}  // namespace detkit::ops
