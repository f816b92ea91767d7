// CPU kernel of detkit::patchwise_conv_transpose2d: a transposed convolution whose stride equals
// its kernel as one matrix product over every pixel of every image, then one copy (with the bias
// added) into a channels-last result. Columns are ordered (i, j, o), so that copy moves runs of O
// contiguous channels: ordered (o, i, j), a copy into NCHW gathered 2 floats at a time from 4 KiB
// apart and took longer than the product (the mask head at 512x384, AMD EPYC Zen 5). The
// gradients are the same product transposed, on the same (pixel, (i, j, o)) matrix of grad_output.
#include "detkit/ops/cpu/patchwise_conv_transpose2d_kernel.h"

#include <ATen/ATen.h>
#include <torch/library.h>

namespace detkit::ops {
namespace {

/// The input (N, C, H, W) as rows (image, y, x) of C channels: a view where it is channels-last.
at::Tensor pixel_rows(const at::Tensor& input) {
  return input.permute({0, 2, 3, 1}).reshape({-1, input.size(1)});
}

/// The weight (C, O, kh, kw) as C rows of columns (i, j, o).
at::Tensor patch_columns(const at::Tensor& weight) {
  return weight.permute({0, 2, 3, 1}).reshape({weight.size(0), -1});
}

at::Tensor patchwise_conv_transpose2d_kernel(const at::Tensor& input, const at::Tensor& weight,
                                             const c10::optional<at::Tensor>& bias) {
  TORCH_CHECK(input.dim() == 4 && weight.dim() == 4 && weight.size(0) == input.size(1),
              "patchwise_conv_transpose2d: input (N, C, H, W) and weight (C, O, kh, kw) needed, "
              "got ",
              input.sizes(), " and ", weight.sizes());
  const int64_t n = input.size(0), h = input.size(2), w = input.size(3);
  const int64_t o = weight.size(1), kh = weight.size(2), kw = weight.size(3);
  const bool with_bias = bias.has_value() && bias->defined();
  TORCH_CHECK(!with_bias || (bias->dim() == 1 && bias->size(0) == o),
              "patchwise_conv_transpose2d: bias must be (", o, "), got ", bias->sizes());
  // Entry (image, y, x, i, j, o) is output (image, o, y * kh + i, x * kw + j).
  const at::Tensor patches =
      at::mm(pixel_rows(input), patch_columns(weight)).view({n, h, w, kh, kw, o});
  at::Tensor out = at::empty({n, o, h * kh, w * kw},
                             input.options().memory_format(at::MemoryFormat::ChannelsLast));
  // The result's memory as (image, y, i, x, j, o), and the product read in that order.
  at::Tensor out_cells = out.permute({0, 2, 3, 1}).view({n, h, kh, w, kw, o});
  const at::Tensor in_order = patches.permute({0, 1, 3, 2, 4, 5});
  if (with_bias)
    at::add_out(out_cells, in_order, *bias);
  else
    out_cells.copy_(in_order);
  return out;
}

}  // namespace

namespace cpu {

ConvGrads patchwise_conv_transpose2d_backward(const at::Tensor& grad_output,
                                              const at::Tensor& input, const at::Tensor& weight,
                                              bool with_bias, std::array<bool, 3> needed) {
  const int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
  const int64_t o = weight.size(1), kh = weight.size(2), kw = weight.size(3);
  TORCH_CHECK(grad_output.dim() == 4 && grad_output.size(0) == n && grad_output.size(1) == o &&
                  grad_output.size(2) == h * kh && grad_output.size(3) == w * kw,
              "patchwise_conv_transpose2d backward: grad_output ", grad_output.sizes(),
              " is not the output of input ", input.sizes(), " and weight ", weight.sizes());
  // Row (image, y, x), column (i, j, o): grad_output (image, o, y * kh + i, x * kw + j), one copy
  // (runs of O channels where grad_output is channels-last).
  const at::Tensor patches =
      at::empty({n, h, w, kh, kw, o}, grad_output.options())
          .copy_(grad_output.reshape({n, o, h, kh, w, kw}).permute({0, 2, 4, 3, 5, 1}))
          .view({n * h * w, kh * kw * o});
  ConvGrads grads;
  if (needed[0]) {
    grads.input = at::mm(patches, patch_columns(weight).t())
                      .view({n, h, w, c})
                      .permute({0, 3, 1, 2})
                      .contiguous(input.suggest_memory_format());
  }
  if (needed[1]) {
    grads.weight = at::mm(pixel_rows(input).t(), patches)
                       .view({c, kh, kw, o})
                       .permute({0, 3, 1, 2})
                       .contiguous();
  }
  if (with_bias && needed[2]) grads.bias = patches.view({-1, o}).sum(0);
  return grads;
}

}  // namespace cpu

TORCH_LIBRARY_IMPL(detkit, CPU, m) {
  m.impl("patchwise_conv_transpose2d", TORCH_FN(patchwise_conv_transpose2d_kernel));
}

}  // namespace detkit::ops
