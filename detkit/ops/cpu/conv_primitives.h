#pragma once
// A convolution's oneDNN primitives for one shape, and running them on libtorch tensors: the
// forward pass, and both backward passes in one Execution (grad_output reordered at most once).
// Shared by the kernels that make them (Winograd on NCHW / channels-last maps, any algorithm on
// blocked maps). Internal to ops/cpu.
#include <ATen/core/Tensor.h>

#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>

#include "detkit/ops/cpu/conv_grads.h"

namespace detkit::ops::cpu {

struct ConvPrimitives {
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_forward forward;
  // Made on a shape's first backward pass (under backward_made), hinted by forward_pd.
  std::optional<dnnl::convolution_backward_data::primitive_desc> backward_input_pd;
  std::optional<dnnl::convolution_backward_data> backward_input;
  std::optional<dnnl::convolution_backward_weights::primitive_desc> backward_weight_pd;
  std::optional<dnnl::convolution_backward_weights> backward_weight;
  std::once_flag backward_made;
};

/// How a convolution's maps are stored (nchw, nhwc or nChw16c): its input (and the input's
/// gradient), and its output (and the output's gradient). One tag: both.
struct MapLayouts {
  MapLayouts(dnnl::memory::format_tag both) : input(both), output(both) {}  // NOLINT: implicit
  MapLayouts(dnnl::memory::format_tag input, dnnl::memory::format_tag output)
      : input(input), output(output) {}
  dnnl::memory::format_tag input, output;
};

/// p's forward pass: input and out stored as `maps` says, weight OIHW, bias (O) or undefined.
void run_conv_forward(const ConvPrimitives& p, const at::Tensor& input, const at::Tensor& weight,
                      const at::Tensor& bias, const at::Tensor& out, MapLayouts maps);

/// p's backward passes (made) for grad_output stored as the output is: needed = {input, weight,
/// bias}; the input's gradient comes in the input's layout, written into `grad_input` where that
/// is defined (a tensor laid out as the input). oneDNN computes the weight's and the bias's in
/// one pass.
ConvGrads run_conv_backward(const ConvPrimitives& p, const at::Tensor& grad_output,
                            const at::Tensor& input, const at::Tensor& weight, bool with_bias,
                            std::array<bool, 3> needed, MapLayouts maps,
                            const at::Tensor& grad_input = at::Tensor());

/// The bytes of scratchpad p's forward pass asks oneDNN for; the larger of its backward passes
/// (made).
int64_t forward_scratchpad_bytes(const ConvPrimitives& p);
int64_t backward_scratchpad_bytes(const ConvPrimitives& p);

/// A convolution's primitives for a batch of n images (their backward ones made where the caller
/// runs a backward pass).
using ConvPrimitivesFor = std::function<std::shared_ptr<const ConvPrimitives>(int64_t n)>;

/// A kernel's ConvPrimitivesFor over its cache: `conv_for(key)` gives the cached convolution of
/// a shape key (a struct with a batch size `n` and a ConvPrimitives `p` in what it points to),
/// `ensure_backward(conv)` makes its backward primitives, called where `backward`.
template <class Key, class ConvFor, class EnsureBackward>
ConvPrimitivesFor primitives_by_batch(const Key& key, bool backward, ConvFor conv_for,
                                      EnsureBackward ensure_backward) {
  return [=](int64_t n) {
    Key batch = key;
    batch.n = n;
    const auto conv = conv_for(batch);
    if (backward) ensure_backward(*conv);
    return std::shared_ptr<const ConvPrimitives>(conv, &conv->p);
  };
}

/// Above this many bytes of oneDNN scratchpad for the whole batch, a pass runs on slices of the
/// batch, each within this bound (one image at least). A Winograd pass's scratchpad holds the
/// transformed maps of the whole batch (635 MB forward, 656 MB backward for 2 x 256 channels at
/// 336x200: the FPN's and the RPN head's P2 at 1333x800; ~120 MB for a mask head's 100 ROIs at
/// 14x14), and the per-thread scratchpad keeps the largest size it was asked for through every
/// later step.
constexpr int64_t kScratchpadPerBatchBytes = int64_t{64} << 20;

/// run_conv_forward for the convolution `primitives` gives for the batch: at once, or on slices
/// of the batch where the whole batch's scratchpad would exceed kScratchpadPerBatchBytes (as many
/// images a slice as keep it within; one at least). Maps are sliced along the batch: every layout
/// here keeps an image contiguous.
void run_conv_forward_by_images(const ConvPrimitivesFor& primitives, const at::Tensor& input,
                                const at::Tensor& weight, const at::Tensor& bias,
                                const at::Tensor& out, MapLayouts maps);

/// run_conv_backward likewise (the weight's and bias's gradients then summed over the slices, in
/// their order).
ConvGrads run_conv_backward_by_images(const ConvPrimitivesFor& primitives,
                                      const at::Tensor& grad_output, const at::Tensor& input,
                                      const at::Tensor& weight, bool with_bias,
                                      std::array<bool, 3> needed, MapLayouts maps);

}  // namespace detkit::ops::cpu
