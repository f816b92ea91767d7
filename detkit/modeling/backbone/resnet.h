#pragma once
// ResNet / ResNeXt in Detectron2's layout: stem ("stem.conv1"), stages "res2".."res5" of
// numbered blocks with conv1..conv3 (+ "shortcut"); basic blocks for depth 18/34, bottlenecks
// for 50/101/152; FrozenBN/BN/GN; stages up to FREEZE_AT frozen (BN there becomes FrozenBN).
#include <torch/nn/modules/container/sequential.h>

#include <vector>

#include "detkit/modeling/backbone/backbone.h"
#include "detkit/modeling/backbone/resnet_blocks.h"

namespace detkit::modeling {

struct ResNetOptions {
  TORCH_ARG(int64_t, depth) = 50;
  TORCH_ARG(int64_t, in_channels) = 3;
  TORCH_ARG(int64_t, stem_out_channels) = 64;
  TORCH_ARG(int64_t, res2_out_channels) = 256;
  TORCH_ARG(int64_t, num_groups) = 1;
  TORCH_ARG(int64_t, width_per_group) = 64;
  TORCH_ARG(bool, stride_in_1x1) = true;
  TORCH_ARG(int64_t, res5_dilation) = 1;
  TORCH_ARG(std::string, norm) = "FrozenBN";
  TORCH_ARG(int64_t, freeze_at) = 2;  // 0: nothing, 1: stem, 2: stem + res2, ...
  TORCH_ARG(std::vector<std::string>, out_features) = std::vector<std::string>{"res4"};
  /// Per stage res2..res5: deformable 3x3s (MODEL.RESNETS.DEFORM_ON_PER_STAGE, bottlenecks only).
  TORCH_ARG(std::vector<bool>, deform_on_per_stage) = std::vector<bool>(4, false);
  TORCH_ARG(bool, deform_modulated) = false;
  TORCH_ARG(int64_t, deform_num_groups) = 1;
};

/// MODEL.RESNETS.* and MODEL.BACKBONE.FREEZE_AT.
ResNetOptions resnet_options_from_config(const config::CfgNode& cfg, int64_t in_channels);
/// MODEL.RESNETS.DEFORM_ON_PER_STAGE: four booleans, else a detkit::Error naming the key.
std::vector<bool> deform_on_per_stage(const config::CfgNode& cfg);

class ResNet : public Backbone {
 public:
  explicit ResNet(const ResNetOptions& options);
  FeatureMap forward(const at::Tensor& images) override;
  layers::ShapeSpecs output_shape() const override;

 private:
  /// Whether the maps run channels-last (NHWC) through the network: in eval mode under
  /// CONV_ALGORITHM auto, for float32 images on the CPU (a oneDNN choice: on a GPU the maps stay
  /// NCHW, as Detectron2's and as detkit's CUDA ROIAlign reads them) and a BatchNorm-family norm
  /// (BN, SyncBN, FrozenBN).
  /// libtorch's convolutions (oneDNN's kernels) then read and write them without reordering to
  /// and from oneDNN's blocked layout, and the FPN maps reach the ROI poolers in the layout their
  /// kernels read in place (Mask R-CNN R50 inference 4 % faster, 16 % less peak memory, with
  /// libtorch 1.13). NCHW otherwise, where libtorch 1.13 measured slower or rounded worse on
  /// channels-last maps: GroupNorm (the demo's step 10 % slower), BatchNorm's batch statistics
  /// (running statistics 1e-4 off Detectron2's after one step, against 1e-5 in NCHW), FrozenBN's
  /// training form (the R50 step 1.7x slower).
  bool channels_last_maps(const at::Tensor& images) const;

  ResNetOptions options_;
  BasicStem stem_{nullptr};
  std::vector<std::string> stage_names_;
  std::vector<torch::nn::Sequential> stages_;
  layers::ShapeSpecs shapes_;  // of every stage built, including "stem"
};

}  // namespace detkit::modeling
