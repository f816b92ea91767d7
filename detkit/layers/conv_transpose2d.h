#pragma once
// A torch::nn::ConvTranspose2d's forward under the process's CONV_ALGORITHM (layers/conv2d.h),
// for the mask and keypoint heads' upsampling: their modules, parameter names and init stay
// libtorch's; only the kernels that compute them change.
#include <ATen/core/Tensor.h>
#include <torch/nn/modules/conv.h>

namespace detkit::layers {

/// deconv->forward(x), the same values up to float32 rounding. Under CONV_ALGORITHM auto, one
/// whose stride equals its kernel (the mask head's 2x2 upsampling) runs as one matrix product,
/// and its gradients as two (ops/patchwise_conv_transpose2d.h); the others (the keypoint head's),
/// and all under direct, run deconv->forward(x), libtorch's kernels.
at::Tensor conv_transpose2d(torch::nn::ConvTranspose2d& deconv, const at::Tensor& x);

}  // namespace detkit::layers
