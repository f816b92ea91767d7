#pragma once
// Res5ROIHeads: the ROI heads of Detectron2's "C4" models. One ROIAlign on the backbone's single
// feature map (res4), then a ResNet res5 stage run per region ("res5": three bottleneck blocks,
// the first with stride 2), whose output the box and mask heads share: the box predictor sees
// its spatial mean, the mask head (MaskRCNNConvUpsampleHead) the map itself — in training the
// foreground proposals' rows, at inference res5 run again on the final boxes. Child names:
// res5, box_predictor, mask_head.
#include <torch/nn/modules/container/sequential.h>

#include <memory>
#include <vector>

#include "detkit/modeling/roi_heads/roi_heads.h"

namespace detkit::modeling {

class Res5ROIHeads : public ROIHeads {
 public:
  Res5ROIHeads(const StandardROIHeadsOptions& options, ROIPooler pooler, torch::nn::Sequential res5,
               FastRCNNOutputLayers box_predictor, std::shared_ptr<MaskHead> mask_head);
  ROIHeadsOutput forward(const structures::ImageList& images, const FeatureMap& features,
                         std::vector<structures::Instances> proposals,
                         const std::vector<structures::Instances>* targets) override;

 private:
  /// Pooled features of `boxes` through res5: (sum of boxes, res5 channels, S / 2, S / 2).
  at::Tensor shared_roi_transform(const FeatureMap& features,
                                  const std::vector<structures::Boxes>& boxes);

  StandardROIHeadsOptions options_;
  Matcher matcher_;
  ROIPooler pooler_;
  torch::nn::Sequential res5_;
  FastRCNNOutputLayers box_predictor_;
  std::shared_ptr<MaskHead> mask_head_;
};

/// Detectron2's _build_res5_block: MODEL.RESNETS.* for a res5 stage of three bottleneck blocks
/// (in RES2_OUT_CHANNELS x 4 channels, out x 8, the first block with stride 2, no dilation).
torch::nn::Sequential build_res5_block(const config::CfgNode& cfg, int64_t* out_channels);

}  // namespace detkit::modeling
