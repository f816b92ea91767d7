#pragma once
// ProposalGenerator: features -> object proposals per image (and, in training, losses); built by
// name (MODEL.PROPOSAL_GENERATOR.NAME) through a registry.
#include <torch/nn/module.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/layers/shape_spec.h"
#include "detkit/modeling/backbone/backbone.h"
#include "detkit/structures/image_list.h"
#include "detkit/structures/instances.h"
#include "detkit/utils/registry.h"

namespace detkit::modeling {

/// Losses by Detectron2's names ("loss_rpn_cls", "loss_cls", ...).
using LossDict = structures::LossDict;

struct ProposalOutput {
  /// Per image: "proposal_boxes" (Boxes) and "objectness_logits" (R), by decreasing logit.
  std::vector<structures::Instances> proposals;
  LossDict losses;  // empty in inference
};

class ProposalGenerator : public torch::nn::Module {
 public:
  /// gt_instances: per image, "gt_boxes" (Boxes); required in training.
  virtual ProposalOutput forward(const structures::ImageList& images, const FeatureMap& features,
                                 const std::vector<structures::Instances>* gt_instances) = 0;
};

using ProposalGeneratorFactory = std::function<std::shared_ptr<ProposalGenerator>(
    const config::CfgNode& cfg, const layers::ShapeSpecs& input_shapes)>;

Registry<ProposalGeneratorFactory>& proposal_generator_registry();

/// MODEL.PROPOSAL_GENERATOR.NAME from the registry; nullptr for "PrecomputedProposals".
std::shared_ptr<ProposalGenerator> build_proposal_generator(const config::CfgNode& cfg,
                                                            const layers::ShapeSpecs& input_shapes);

#define DETKIT_REGISTER_PROPOSAL_GENERATOR(name, ...) \
  DETKIT_REGISTER(::detkit::modeling::proposal_generator_registry(), #name, __VA_ARGS__)

}  // namespace detkit::modeling
