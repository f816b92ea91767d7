#pragma once
// GeneralizedRCNN: normalise and pad the images, backbone -> proposal generator -> ROI heads.
// Training returns Detectron2's loss dict; inference returns detections per image rescaled to
// the original image size, with masks pasted (threshold 0.5). Child names: backbone,
// proposal_generator, roi_heads — so state dicts match Detectron2's.
#include <memory>
#include <optional>
#include <vector>

#include "detkit/modeling/backbone/backbone.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/modeling/proposal_generator/proposal_generator.h"
#include "detkit/modeling/roi_heads/roi_heads.h"

namespace detkit::modeling {

using ModelInput = structures::ModelInput;

class GeneralizedRCNN : public MetaArch {
 public:
  GeneralizedRCNN(std::shared_ptr<Backbone> backbone,
                  std::shared_ptr<ProposalGenerator> proposal_generator,
                  std::shared_ptr<ROIHeads> roi_heads, std::vector<double> pixel_mean,
                  std::vector<double> pixel_std);

  /// Training mode: the summed-later loss dict ("loss_rpn_cls", "loss_rpn_loc", "loss_cls",
  /// "loss_box_reg", "loss_mask").
  LossDict losses(const std::vector<ModelInput>& batch) override;
  /// Eval mode: per image "pred_boxes", "scores", "pred_classes" (and "pred_masks" (R, H, W)
  /// bool) in the original image's size.
  std::vector<structures::Instances> inference(const std::vector<ModelInput>& batch) override;
  /// Moves parameters, buffers and the pixel mean/std (not in the state dict) to `device`.
  void to(torch::Device device, bool non_blocking = false) override;
  using MetaArch::to;  // the dtype overloads

  structures::ImageList preprocess_image(const std::vector<ModelInput>& batch) const;
  /// The proposal generator's output, or with none (MODEL.PROPOSAL_GENERATOR.NAME
  /// "PrecomputedProposals") the inputs' own proposals.
  ProposalOutput proposals_of(const std::vector<ModelInput>& batch,
                              const structures::ImageList& images, const FeatureMap& features,
                              const std::vector<structures::Instances>* targets);
  const std::shared_ptr<Backbone>& backbone() const { return backbone_; }

 protected:
  /// The proposal generator's and ROI heads' losses on a preprocessed batch and its features
  /// (losses() after the backbone; PanopticFPN adds its semantic head's).
  LossDict detector_losses(const std::vector<ModelInput>& batch,
                           const structures::ImageList& images, const FeatureMap& features);
  /// The detections of a preprocessed batch in each original image's size (inference() after
  /// the backbone).
  std::vector<structures::Instances> detect(const std::vector<ModelInput>& batch,
                                            const structures::ImageList& images,
                                            const FeatureMap& features);

 private:
  std::shared_ptr<Backbone> backbone_;
  std::shared_ptr<ProposalGenerator> proposal_generator_;
  std::shared_ptr<ROIHeads> roi_heads_;
  at::Tensor pixel_mean_, pixel_std_;  // (C, 1, 1); not in the state dict, as in Detectron2
};

/// GeneralizedRCNN with MODEL.BACKBONE, MODEL.PROPOSAL_GENERATOR and MODEL.ROI_HEADS from the
/// config (registered as MODEL.META_ARCHITECTURE "GeneralizedRCNN").
std::shared_ptr<GeneralizedRCNN> build_generalized_rcnn(const config::CfgNode& cfg);

/// The size an input's predictions are given in: its original (height, width), or the network
/// input's `image_size` where the input does not say (0).
std::pair<int64_t, int64_t> output_size(const ModelInput& input,
                                        std::pair<int64_t, int64_t> image_size);

/// Rescales one image's detections ("pred_boxes", or a ProposalNetwork's "proposal_boxes") from
/// the network's input size to (height, width), clips, drops empty boxes and pastes masks into
/// full-image bool masks at `mask_threshold`.
structures::Instances detector_postprocess(const structures::Instances& results, int64_t height,
                                           int64_t width, double mask_threshold = 0.5);

}  // namespace detkit::modeling
