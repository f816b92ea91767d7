#include "detkit/modeling/meta_arch/generalized_rcnn.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "detkit/layers/precision.h"
#include "detkit/modeling/meta_arch/preprocess.h"
#include "detkit/modeling/sampling.h"
#include "detkit/ops/paste_masks.h"
#include "detkit/utils/error.h"

namespace detkit::modeling {

using structures::Boxes;
using structures::Instances;

GeneralizedRCNN::GeneralizedRCNN(std::shared_ptr<Backbone> backbone,
                                 std::shared_ptr<ProposalGenerator> proposal_generator,
                                 std::shared_ptr<ROIHeads> roi_heads,
                                 std::vector<double> pixel_mean, std::vector<double> pixel_std)
    : backbone_(register_module("backbone", std::move(backbone))),
      proposal_generator_(proposal_generator
                              ? register_module("proposal_generator", std::move(proposal_generator))
                              : nullptr),
      roi_heads_(register_module("roi_heads", std::move(roi_heads))) {
  std::tie(pixel_mean_, pixel_std_) = pixel_normalization(pixel_mean, pixel_std);
}

structures::ImageList GeneralizedRCNN::preprocess_image(
    const std::vector<ModelInput>& batch) const {
  return normalize_and_pad_images(batch, pixel_mean_, pixel_std_, backbone_->size_divisibility(),
                                  "GeneralizedRCNN");
}

void GeneralizedRCNN::to(torch::Device device, bool non_blocking) {
  MetaArch::to(device, non_blocking);
  pixel_mean_ = pixel_mean_.to(device);
  pixel_std_ = pixel_std_.to(device);
}

ProposalOutput GeneralizedRCNN::proposals_of(const std::vector<ModelInput>& batch,
                                             const structures::ImageList& images,
                                             const FeatureMap& features,
                                             const std::vector<Instances>* targets) {
  if (proposal_generator_) return proposal_generator_->forward(images, features, targets);
  // PrecomputedProposals: the inputs carry them (MODEL.LOAD_PROPOSALS), no proposal losses.
  ProposalOutput out;
  for (const auto& input : batch) {
    if (!input.proposals) {
      throw Error(
          "GeneralizedRCNN: MODEL.PROPOSAL_GENERATOR.NAME is PrecomputedProposals, but the "
          "input " +
          input.file_name +
          " has no proposals (MODEL.LOAD_PROPOSALS True with "
          "DATASETS.PROPOSAL_FILES_TRAIN / _TEST gives them)");
    }
    Instances p = *input.proposals;
    const c10::Device device = images.tensor().device();
    p.set("proposal_boxes", structures::Boxes(p.boxes("proposal_boxes").tensor().to(device)));
    p.set("objectness_logits", p.tensor("objectness_logits").to(device));
    out.proposals.push_back(std::move(p));
  }
  return out;
}

LossDict GeneralizedRCNN::losses(const std::vector<ModelInput>& batch) {
  TORCH_CHECK(is_training(), "GeneralizedRCNN::losses needs training mode (model->train())");
  const ImageGenerators generators(batch);  // each image's sampling, when it is seeded
  auto images = preprocess_image(batch);
  FeatureMap features = backbone_->forward(images.tensor());
  return detector_losses(batch, images, features);
}

LossDict GeneralizedRCNN::detector_losses(const std::vector<ModelInput>& batch,
                                          const structures::ImageList& images,
                                          const FeatureMap& features) {
  // The loader's targets are on the host; the model matches them on the images' device.
  std::vector<Instances> targets;
  for (const auto& input : batch) {
    if (!input.instances) throw Error("GeneralizedRCNN: a training input has no instances");
    targets.push_back(input.instances->to(images.tensor().device()));
  }
  ProposalOutput proposals = proposals_of(batch, images, features, &targets);
  if (training_visualization_requested() && !proposals.proposals.empty()) {
    // Detectron2's visualize_training: the batch's first image, its ground-truth boxes and the
    // 20 proposals scored highest (the RPN hands them out best first).
    const at::Tensor top = proposals.proposals[0].boxes("proposal_boxes").tensor();
    record_training_visualization(
        {"Left: GT bounding boxes;  Right: Predicted proposals", batch[0].image,
         {targets[0].boxes("gt_boxes").tensor().detach(),
          top.slice(0, 0, std::min<int64_t>(top.size(0), 20)).detach()}});
  }
  ROIHeadsOutput heads = roi_heads_->forward(images, features, proposals.proposals, &targets);
  LossDict losses = heads.losses;
  for (auto& [name, loss] : proposals.losses) losses[name] = loss;
  return losses;
}

std::vector<Instances> GeneralizedRCNN::inference(const std::vector<ModelInput>& batch) {
  TORCH_CHECK(!is_training(), "GeneralizedRCNN::inference needs eval mode (model->eval())");
  auto images = preprocess_image(batch);
  FeatureMap features = backbone_->forward(images.tensor());
  return detect(batch, images, features);
}

std::vector<Instances> GeneralizedRCNN::detect(const std::vector<ModelInput>& batch,
                                               const structures::ImageList& images,
                                               const FeatureMap& features) {
  ProposalOutput proposals = proposals_of(batch, images, features, nullptr);
  ROIHeadsOutput heads = roi_heads_->forward(images, features, proposals.proposals, nullptr);
  std::vector<Instances> out;
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto [h, w] = output_size(batch[i], images.image_sizes()[i]);
    out.push_back(detector_postprocess(heads.instances[i], h, w));
  }
  return out;
}

std::pair<int64_t, int64_t> output_size(const ModelInput& input,
                                        std::pair<int64_t, int64_t> image_size) {
  return {input.height > 0 ? input.height : image_size.first,
          input.width > 0 ? input.width : image_size.second};
}

Instances detector_postprocess(const Instances& results, int64_t height, int64_t width,
                               double mask_threshold) {
  const double scale_x = static_cast<double>(width) / results.image_width();
  const double scale_y = static_cast<double>(height) / results.image_height();
  Instances scaled(height, width);
  for (const auto& name : results.field_names()) {
    // Under autocast some fields come out in reduced precision (scores of a bfloat16 box head):
    // what leaves the model is fp32.
    const auto& field = results.get(name);
    if (const at::Tensor* t = std::get_if<at::Tensor>(&field))
      scaled.set(name, layers::fp32_if_reduced(*t));
    else if (const Boxes* b = std::get_if<Boxes>(&field))
      scaled.set(name, Boxes(layers::fp32_if_reduced(b->tensor())));
    else
      scaled.set(name, field);
  }
  // Detections carry "pred_boxes"; a ProposalNetwork's proposals "proposal_boxes".
  const char* box_field = scaled.has("pred_boxes") ? "pred_boxes" : "proposal_boxes";
  Boxes boxes = scaled.boxes(box_field).clone();
  boxes.scale(scale_x, scale_y);
  boxes.clip(height, width);
  scaled.set(box_field, boxes);
  Instances kept = scaled.index(boxes.nonempty());
  if (kept.has("pred_masks")) {
    at::Tensor probs = kept.tensor("pred_masks");
    kept.set("pred_masks",
             ops::paste_masks_in_image(probs.select(1, 0), kept.boxes("pred_boxes").tensor(),
                                       height, width, mask_threshold));
  }
  if (kept.has("pred_keypoints")) {  // x and y in float32 times the double scale, as Detectron2
    at::Tensor keypoints = kept.tensor("pred_keypoints").clone();
    keypoints.select(2, 0).mul_(scale_x);
    keypoints.select(2, 1).mul_(scale_y);
    kept.set("pred_keypoints", keypoints);
  }
  return kept;
}

std::shared_ptr<GeneralizedRCNN> build_generalized_rcnn(const config::CfgNode& cfg) {
  auto backbone = build_backbone(cfg);
  auto shapes = backbone->output_shape();
  auto proposal_generator = build_proposal_generator(cfg, shapes);
  auto roi_heads = build_roi_heads(cfg, shapes);
  return std::make_shared<GeneralizedRCNN>(backbone, proposal_generator, roi_heads,
                                           cfg.get_float_list("MODEL.PIXEL_MEAN"),
                                           cfg.get_float_list("MODEL.PIXEL_STD"));
}

DETKIT_REGISTER_META_ARCH(GeneralizedRCNN, [](const config::CfgNode& cfg) {
  return std::static_pointer_cast<MetaArch>(build_generalized_rcnn(cfg));
});

}  // namespace detkit::modeling
