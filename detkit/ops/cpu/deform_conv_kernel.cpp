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

namespace detkit::ops {
namespace {

bool present(const c10::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

// Sizes and settings of one call, checked by check_deform_conv2d.
struct DeformConvShape {
  int64_t batch, channels, height, width;    // input
  int64_t out_channels, kernel_h, kernel_w;  // weight
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups, offset_groups;
  int64_t out_h, out_w;
  int64_t taps() const { return kernel_h * kernel_w; }
  int64_t positions() const { return out_h * out_w; }
  int64_t channels_per_offset_group() const { return channels / offset_groups; }
  int64_t rows_per_group() const { return channels / groups * taps(); }  // of the columns
};

DeformConvShape check_deform_conv2d(const char* op, const at::Tensor& input,
                                    const at::Tensor& weight, const at::Tensor& offset,
                                    const c10::optional<at::Tensor>& mask,
                                    const c10::optional<at::Tensor>& bias, int64_t stride_h,
                                    int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                    int64_t dilation_h, int64_t dilation_w, int64_t groups,
                                    int64_t offset_groups) {
  TORCH_CHECK(input.dim() == 4, op, ": input must be (N, C, H, W), got sizes ", input.sizes());
  const at::ScalarType dtype = input.scalar_type();
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kDouble, op,
              ": input must be float or double, got ", dtype);
  auto check_dtype = [&](const at::Tensor& t, const char* name) {
    TORCH_CHECK(t.scalar_type() == dtype, op, ": ", name, " has dtype ", t.scalar_type(),
                ", expected input's ", dtype);
  };
  check_dtype(weight, "weight");
  check_dtype(offset, "offset");
  if (present(mask)) check_dtype(*mask, "mask");
  if (present(bias)) check_dtype(*bias, "bias");
  TORCH_CHECK(weight.dim() == 4, op,
              ": weight must be (out_channels, in_channels / groups, kh, kw), got sizes ",
              weight.sizes());
  TORCH_CHECK(stride_h > 0 && stride_w > 0, op, ": stride must be positive, got (", stride_h, ", ",
              stride_w, ")");
  TORCH_CHECK(pad_h >= 0 && pad_w >= 0, op, ": padding must be non-negative, got (", pad_h, ", ",
              pad_w, ")");
  TORCH_CHECK(dilation_h > 0 && dilation_w > 0, op, ": dilation must be positive, got (",
              dilation_h, ", ", dilation_w, ")");
  TORCH_CHECK(groups > 0, op, ": groups must be positive, got ", groups);
  TORCH_CHECK(offset_groups > 0, op, ": offset_groups must be positive, got ", offset_groups);

  DeformConvShape s;
  s.batch = input.size(0);
  s.channels = input.size(1);
  s.height = input.size(2);
  s.width = input.size(3);
  s.out_channels = weight.size(0);
  s.kernel_h = weight.size(2);
  s.kernel_w = weight.size(3);
  s.stride_h = stride_h, s.stride_w = stride_w, s.pad_h = pad_h, s.pad_w = pad_w;
  s.dilation_h = dilation_h, s.dilation_w = dilation_w;
  s.groups = groups, s.offset_groups = offset_groups;
  TORCH_CHECK(s.channels % groups == 0, op, ": input has ", s.channels,
              " channels, not divisible by groups = ", groups);
  TORCH_CHECK(weight.size(1) * groups == s.channels, op, ": weight has ", weight.size(1),
              " input channels, expected in_channels / groups = ", s.channels, " / ", groups);
  TORCH_CHECK(s.out_channels % groups == 0, op, ": weight has ", s.out_channels,
              " output channels, not divisible by groups = ", groups);
  TORCH_CHECK(s.kernel_h > 0 && s.kernel_w > 0, op, ": weight's kernel is ", s.kernel_h, " x ",
              s.kernel_w, ", expected at least 1 x 1");
  TORCH_CHECK(s.channels % offset_groups == 0, op, ": input has ", s.channels,
              " channels, not divisible by offset_groups = ", offset_groups);
  const int64_t extent_h = dilation_h * (s.kernel_h - 1) + 1;
  const int64_t extent_w = dilation_w * (s.kernel_w - 1) + 1;
  TORCH_CHECK(s.height + 2 * pad_h >= extent_h && s.width + 2 * pad_w >= extent_w, op,
              ": input is ", s.height, " x ", s.width, ", smaller than the dilated kernel ",
              extent_h, " x ", extent_w, " even with padding (", pad_h, ", ", pad_w, ")");
  s.out_h = (s.height + 2 * pad_h - extent_h) / stride_h + 1;
  s.out_w = (s.width + 2 * pad_w - extent_w) / stride_w + 1;

  // offset and mask: per image, per (offset group, tap), one value (pair) per output pixel.
  auto check_per_tap = [&](const at::Tensor& t, const char* name, int64_t per_tap,
                           const char* expected) {
    TORCH_CHECK(t.dim() == 4, op, ": ", name, " must be (N, ", expected,
                ", out_h, out_w), got sizes ", t.sizes());
    TORCH_CHECK(t.size(0) == s.batch, op, ": ", name, " has batch size ", t.size(0),
                ", expected input's ", s.batch);
    TORCH_CHECK(t.size(1) == per_tap * offset_groups * s.taps(), op, ": ", name, " has ", t.size(1),
                " channels, expected ", expected, " = ", per_tap * offset_groups * s.taps());
    TORCH_CHECK(t.size(2) == s.out_h && t.size(3) == s.out_w, op, ": ", name, " is ", t.size(2),
                " x ", t.size(3), ", expected the output size ", s.out_h, " x ", s.out_w);
  };
  check_per_tap(offset, "offset", 2, "2 * offset_groups * kh * kw");
  if (present(mask)) check_per_tap(*mask, "mask", 1, "offset_groups * kh * kw");
  if (present(bias)) {
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == s.out_channels, op,
                ": bias must be (out_channels) = (", s.out_channels, "), got sizes ",
                bias->sizes());
  }
  return s;
}

// Items per parallel_for chunk when each item costs about `work`.
int64_t grain_for(int64_t work) { return std::max<int64_t>(1, at::internal::GRAIN_SIZE / work); }

// Where one tap samples one output pixel: the plane offsets of the four corners around (y, x),
// -1 for a corner outside the map (it counts 0), and (y, x)'s distance to the top-left corner.
template <typename T>
struct DeformSample {
  int64_t corner[4];  // (y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)
  T ly, lx;           // y - y0, x - x0
};

template <typename T>
DeformSample<T> locate_sample(T y, T x, int64_t height, int64_t width) {
  DeformSample<T> s{{-1, -1, -1, -1}, T(0), T(0)};
  // Outside [-1, H) x [-1, W) (NaN too) every corner is outside: value and slopes are 0. At
  // exactly -1 row (column) 0 keeps its corners with weight 0: the value is 0 and the slope the
  // one-sided one from inside, as torchvision computes it.
  if (!(y >= -1 && y < height && x >= -1 && x < width)) return s;
  const int64_t y0 = static_cast<int64_t>(std::floor(y));
  const int64_t x0 = static_cast<int64_t>(std::floor(x));
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
std::array<T, 4> corner_values(const T* plane, const DeformSample<T>& s) {
  std::array<T, 4> v;
  for (int q = 0; q < 4; ++q) v[q] = s.corner[q] >= 0 ? plane[s.corner[q]] : T(0);
  return v;
}

template <typename T>
std::array<T, 4> bilinear_weights(const DeformSample<T>& s) {
  const T hy = 1 - s.ly, hx = 1 - s.lx;
  return {hy * hx, hy * s.lx, s.ly * hx, s.ly * s.lx};
}

template <typename T>
T sample_value(const std::array<T, 4>& v, const DeformSample<T>& s) {
  const std::array<T, 4> w = bilinear_weights(s);
  return w[0] * v[0] + w[1] * v[1] + w[2] * v[2] + w[3] * v[3];
}

// d sample_value / dy and d sample_value / dx.
template <typename T>
T slope_y(const std::array<T, 4>& v, const DeformSample<T>& s) {
  return (1 - s.lx) * (v[2] - v[0]) + s.lx * (v[3] - v[1]);
}
template <typename T>
T slope_x(const std::array<T, 4>& v, const DeformSample<T>& s) {
  return (1 - s.ly) * (v[1] - v[0]) + s.ly * (v[3] - v[2]);
}

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
          const std::array<T, 4> w = bilinear_weights(sample[p]);
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
          const std::array<T, 4> v = corner_values(input + c * plane, sample[p]);
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
  TORCH_CHECK(grad.sizes() == at::IntArrayRef({s.batch, s.out_channels, s.out_h, s.out_w}), op,
              ": grad has sizes ", grad.sizes(), ", expected the output's [", s.batch, ", ",
              s.out_channels, ", ", s.out_h, ", ", s.out_w, "]");
  TORCH_CHECK(grad.scalar_type() == input.scalar_type(), op, ": grad has dtype ",
              grad.scalar_type(), ", expected input's ", input.scalar_type());
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
