// Autograd kernels of detkit::roi_align and detkit::multilevel_roi_align: the gradient flows to
// the feature maps (none to rois or levels), so a C++ loss.backward() reaches them. Double
// backward is refused with an error.
#include "detkit/ops/roi_align.h"

#include <torch/autograd.h>
#include <torch/library.h>

namespace detkit::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class RoiAlignFunction : public torch::autograd::Function<RoiAlignFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input,
                               const at::Tensor& rois, double spatial_scale, int64_t pooled_height,
                               int64_t pooled_width, int64_t sampling_ratio, bool aligned) {
    ctx->saved_data["spatial_scale"] = spatial_scale;
    ctx->saved_data["pooled_height"] = pooled_height;
    ctx->saved_data["pooled_width"] = pooled_width;
    ctx->saved_data["sampling_ratio"] = sampling_ratio;
    ctx->saved_data["aligned"] = aligned;
    ctx->saved_data["input_shape"] = input.sizes();
    ctx->save_for_backward({rois});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return {roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio,
                      aligned)};
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_output) {
    const at::Tensor rois = ctx->get_saved_variables()[0];
    const auto shape = ctx->saved_data["input_shape"].toIntVector();
    at::Tensor grad_input = roi_align_backward(
        grad_output[0], rois, ctx->saved_data["spatial_scale"].toDouble(),
        ctx->saved_data["pooled_height"].toInt(), ctx->saved_data["pooled_width"].toInt(), shape[0],
        shape[1], shape[2], shape[3], ctx->saved_data["sampling_ratio"].toInt(),
        ctx->saved_data["aligned"].toBool());
    // One entry per forward argument: input, rois, spatial_scale, pooled h/w, sampling, aligned.
    return {grad_input,   at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class RoiAlignBackwardFunction : public torch::autograd::Function<RoiAlignBackwardFunction> {
 public:
  static variable_list forward(AutogradContext* /*ctx*/, const at::Tensor& grad,
                               const at::Tensor& rois, double spatial_scale, int64_t pooled_height,
                               int64_t pooled_width, int64_t batch_size, int64_t channels,
                               int64_t height, int64_t width, int64_t sampling_ratio,
                               bool aligned) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return {roi_align_backward(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size,
                               channels, height, width, sampling_ratio, aligned)};
  }

  static variable_list backward(AutogradContext* /*ctx*/, const variable_list& /*grad_output*/) {
    TORCH_CHECK(false, "detkit::roi_align: double backward is not supported");
  }
};

class MultilevelRoiAlignFunction : public torch::autograd::Function<MultilevelRoiAlignFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, at::TensorList features,
                               const at::Tensor& rois, const at::Tensor& levels,
                               at::ArrayRef<double> spatial_scales, int64_t pooled_height,
                               int64_t pooled_width, int64_t sampling_ratio, bool aligned) {
    at::Tensor output;
    {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      output = multilevel_roi_align(features, rois, levels, spatial_scales, pooled_height,
                                    pooled_width, sampling_ratio, aligned);  // checks the inputs
    }
    std::vector<int64_t> heights, widths;
    bool channels_last = true;  // every level stored so: the gradients come back so too
    for (const at::Tensor& f : features) {
      heights.push_back(f.size(2));
      widths.push_back(f.size(3));
      channels_last =
          channels_last && !f.is_contiguous() && f.is_contiguous(at::MemoryFormat::ChannelsLast);
    }
    ctx->saved_data["spatial_scales"] = spatial_scales.vec();
    ctx->saved_data["pooled_height"] = pooled_height;
    ctx->saved_data["pooled_width"] = pooled_width;
    ctx->saved_data["sampling_ratio"] = sampling_ratio;
    ctx->saved_data["aligned"] = aligned;
    ctx->saved_data["batch_size"] = features[0].size(0);
    ctx->saved_data["channels"] = features[0].size(1);
    ctx->saved_data["heights"] = heights;
    ctx->saved_data["widths"] = widths;
    ctx->saved_data["channels_last"] = channels_last;
    ctx->save_for_backward({rois, levels});
    return {output};
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_output) {
    const variable_list saved = ctx->get_saved_variables();
    auto& d = ctx->saved_data;
    TORCH_CHECK(!(at::GradMode::is_enabled() && grad_output[0].requires_grad()),
                "detkit::multilevel_roi_align: double backward is not supported");
    variable_list grads = multilevel_roi_align_backward(
        grad_output[0], saved[0], saved[1], d["spatial_scales"].toDoubleVector(),
        d["pooled_height"].toInt(), d["pooled_width"].toInt(), d["batch_size"].toInt(),
        d["channels"].toInt(), d["heights"].toIntVector(), d["widths"].toIntVector(),
        d["sampling_ratio"].toInt(), d["aligned"].toBool(), d["channels_last"].toBool());
    // One entry per level, then rois, levels, spatial_scales, pooled h/w, sampling, aligned.
    grads.resize(grads.size() + 7);
    return grads;
  }
};

at::Tensor roi_align_autograd(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                              int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                              bool aligned) {
  return RoiAlignFunction::apply(input, rois, spatial_scale, pooled_height, pooled_width,
                                 sampling_ratio, aligned)[0];
}

at::Tensor roi_align_backward_autograd(const at::Tensor& grad, const at::Tensor& rois,
                                       double spatial_scale, int64_t pooled_height,
                                       int64_t pooled_width, int64_t batch_size, int64_t channels,
                                       int64_t height, int64_t width, int64_t sampling_ratio,
                                       bool aligned) {
  return RoiAlignBackwardFunction::apply(grad, rois, spatial_scale, pooled_height, pooled_width,
                                         batch_size, channels, height, width, sampling_ratio,
                                         aligned)[0];
}

at::Tensor multilevel_roi_align_autograd(at::TensorList features, const at::Tensor& rois,
                                         const at::Tensor& levels,
                                         at::ArrayRef<double> spatial_scales, int64_t pooled_height,
                                         int64_t pooled_width, int64_t sampling_ratio,
                                         bool aligned) {
  return MultilevelRoiAlignFunction::apply(features, rois, levels, spatial_scales, pooled_height,
                                           pooled_width, sampling_ratio, aligned)[0];
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, Autograd, m) {
  m.impl("multilevel_roi_align", multilevel_roi_align_autograd);
  m.impl("roi_align", roi_align_autograd);
  m.impl("_roi_align_backward", roi_align_backward_autograd);
}

}  // namespace detkit::ops
