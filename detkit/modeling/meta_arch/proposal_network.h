#pragma once
// ProposalNetwork (Detectron2's RPN-only meta-architecture): normalise and pad the images,
// backbone -> proposal generator. Training returns the proposal generator's losses; inference
// returns per image "proposal_boxes" (Boxes) and "objectness_logits", rescaled to the original
// image size, clipped and without empty boxes — what COCOEvaluator scores as box proposals
// (average recall) and writes as a proposal file. Child names: backbone, proposal_generator.
#include <memory>
#include <vector>

#include "detkit/modeling/backbone/backbone.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/modeling/proposal_generator/proposal_generator.h"

namespace detkit::modeling {

class ProposalNetwork : public MetaArch {
 public:
  ProposalNetwork(std::shared_ptr<Backbone> backbone,
                  std::shared_ptr<ProposalGenerator> proposal_generator,
                  std::vector<double> pixel_mean, std::vector<double> pixel_std);

  /// Training mode: "loss_rpn_cls", "loss_rpn_loc".
  LossDict losses(const std::vector<structures::ModelInput>& batch) override;
  /// Eval mode: per image "proposal_boxes" and "objectness_logits" (best first) in the original
  /// image's size.
  std::vector<structures::Instances> inference(
      const std::vector<structures::ModelInput>& batch) override;
  void to(torch::Device device, bool non_blocking = false) override;
  using MetaArch::to;

  structures::ImageList preprocess_image(const std::vector<structures::ModelInput>& batch) const;
  const std::shared_ptr<Backbone>& backbone() const { return backbone_; }
  const std::shared_ptr<ProposalGenerator>& proposal_generator() const {
    return proposal_generator_;
  }

 private:
  std::shared_ptr<Backbone> backbone_;
  std::shared_ptr<ProposalGenerator> proposal_generator_;
  at::Tensor pixel_mean_, pixel_std_;  // (C, 1, 1); not in the state dict, as in Detectron2
};

/// ProposalNetwork with MODEL.BACKBONE and MODEL.PROPOSAL_GENERATOR from the config (registered
/// as MODEL.META_ARCHITECTURE "ProposalNetwork").
std::shared_ptr<ProposalNetwork> build_proposal_network(const config::CfgNode& cfg);

}  // namespace detkit::modeling
