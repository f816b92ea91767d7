#pragma once
// MaskRCNNConvUpsampleHead: pooled ROI features -> convs mask_fcn1..N (3x3, ReLU) -> "deconv"
// (2x2 transposed conv, stride 2, ReLU) -> "predictor" (1x1, one mask per class or one for all).
// Training: mean per-pixel BCE against polygon targets cut to each proposal (loss_mask).
// Inference: the predicted class's mask probabilities as "pred_masks" (R, 1, M, M).
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>

#include <functional>
#include <memory>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/layers/conv2d.h"
#include "detkit/modeling/proposal_generator/proposal_generator.h"
#include "detkit/structures/instances.h"
#include "detkit/utils/registry.h"

namespace detkit::modeling {

class MaskHead : public torch::nn::Module {
 public:
  /// x: (R, C, S, S) pooled features for the instances of every image, in order. Training: the
  /// instances hold "proposal_boxes", "gt_classes", "gt_masks"; returns {"loss_mask"}. Inference:
  /// the instances hold "pred_classes" and get "pred_masks"; returns no losses.
  virtual LossDict forward(const at::Tensor& x, std::vector<structures::Instances>& instances) = 0;
};

struct MaskRCNNConvUpsampleHeadOptions {
  int64_t input_channels = 256;
  int64_t num_classes = 80;
  std::vector<int64_t> conv_dims = {256, 256, 256, 256};  // NUM_CONV x CONV_DIM (may be none)
  int64_t deconv_channels = 256;                          // CONV_DIM: the deconvolution's output
  std::string norm;
  bool cls_agnostic_mask = false;
  double loss_weight = 1.0;
};

class MaskRCNNConvUpsampleHead : public MaskHead {
 public:
  explicit MaskRCNNConvUpsampleHead(const MaskRCNNConvUpsampleHeadOptions& options);
  LossDict forward(const at::Tensor& x, std::vector<structures::Instances>& instances) override;
  /// (R, classes or 1, 2S, 2S) mask logits.
  at::Tensor predict_logits(const at::Tensor& x);

 private:
  MaskRCNNConvUpsampleHeadOptions options_;
  std::vector<layers::Conv2d> convs_;
  torch::nn::ConvTranspose2d deconv_{nullptr};
  layers::Conv2d predictor_{nullptr};
};

/// Mean binary cross-entropy of each ROI's mask logits (for its GT class) against its GT
/// masks (polygons rasterised, or bitmasks sampled) inside the proposal box.
at::Tensor mask_rcnn_loss(const at::Tensor& pred_mask_logits,
                          const std::vector<structures::Instances>& instances);
/// Sets "pred_masks" (R, 1, M, M) probabilities of each instance's predicted class.
void mask_rcnn_inference(const at::Tensor& pred_mask_logits,
                         std::vector<structures::Instances>& instances);

using MaskHeadFactory =
    std::function<std::shared_ptr<MaskHead>(const config::CfgNode& cfg, int64_t input_channels)>;
Registry<MaskHeadFactory>& mask_head_registry();

#define DETKIT_REGISTER_MASK_HEAD(name, ...) \
  DETKIT_REGISTER(::detkit::modeling::mask_head_registry(), #name, __VA_ARGS__)

std::shared_ptr<MaskHead> build_mask_head(const config::CfgNode& cfg, int64_t input_channels);

}  // namespace detkit::modeling
