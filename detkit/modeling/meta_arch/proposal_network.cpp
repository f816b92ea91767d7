#include "detkit/modeling/meta_arch/proposal_network.h"

#include <ATen/ATen.h>

#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/modeling/meta_arch/preprocess.h"
#include "detkit/utils/error.h"

namespace detkit::modeling {

using structures::Instances;
using structures::ModelInput;

ProposalNetwork::ProposalNetwork(std::shared_ptr<Backbone> backbone,
                                 std::shared_ptr<ProposalGenerator> proposal_generator,
                                 std::vector<double> pixel_mean, std::vector<double> pixel_std)
    : backbone_(register_module("backbone", std::move(backbone))),
      proposal_generator_(register_module("proposal_generator", std::move(proposal_generator))) {
  std::tie(pixel_mean_, pixel_std_) = pixel_normalization(pixel_mean, pixel_std);
}

structures::ImageList ProposalNetwork::preprocess_image(
    const std::vector<ModelInput>& batch) const {
  return normalize_and_pad_images(batch, pixel_mean_, pixel_std_, backbone_->size_divisibility(),
                                  "ProposalNetwork");
}

void ProposalNetwork::to(torch::Device device, bool non_blocking) {
  MetaArch::to(device, non_blocking);
  pixel_mean_ = pixel_mean_.to(device);
  pixel_std_ = pixel_std_.to(device);
}

LossDict ProposalNetwork::losses(const std::vector<ModelInput>& batch) {
  TORCH_CHECK(is_training(), "ProposalNetwork::losses needs training mode (model->train())");
  // The loader's targets are on the host; the model matches them where preprocess_image puts
  // the images (the pixel mean's device).
  std::vector<Instances> targets;
  for (const auto& input : batch) {
    if (!input.instances) throw Error("ProposalNetwork: a training input has no instances");
    targets.push_back(input.instances->to(pixel_mean_.device()));
  }
  auto images = preprocess_image(batch);
  FeatureMap features = backbone_->forward(images.tensor());
  // Detectron2 makes the proposals in training too (and drops them); the RPN's losses do not
  // depend on them.
  return proposal_generator_->forward(images, features, &targets).losses;
}

std::vector<Instances> ProposalNetwork::inference(const std::vector<ModelInput>& batch) {
  TORCH_CHECK(!is_training(), "ProposalNetwork::inference needs eval mode (model->eval())");
  auto images = preprocess_image(batch);
  FeatureMap features = backbone_->forward(images.tensor());
  ProposalOutput proposals = proposal_generator_->forward(images, features, nullptr);
  std::vector<Instances> out;
  for (size_t i = 0; i < batch.size(); ++i) {
    int64_t h = batch[i].height > 0 ? batch[i].height : images.image_sizes()[i].first;
    int64_t w = batch[i].width > 0 ? batch[i].width : images.image_sizes()[i].second;
    out.push_back(detector_postprocess(proposals.proposals[i], h, w));
  }
  return out;
}

std::shared_ptr<ProposalNetwork> build_proposal_network(const config::CfgNode& cfg) {
  auto backbone = build_backbone(cfg);
  auto proposal_generator = build_proposal_generator(cfg, backbone->output_shape());
  if (!proposal_generator)
    throw Error(
        "ProposalNetwork needs a proposal generator: MODEL.PROPOSAL_GENERATOR.NAME is "
        "PrecomputedProposals");
  return std::make_shared<ProposalNetwork>(backbone, proposal_generator,
                                           cfg.get_float_list("MODEL.PIXEL_MEAN"),
                                           cfg.get_float_list("MODEL.PIXEL_STD"));
}

DETKIT_REGISTER_META_ARCH(ProposalNetwork, [](const config::CfgNode& cfg) {
  return std::static_pointer_cast<MetaArch>(build_proposal_network(cfg));
});

}  // namespace detkit::modeling
