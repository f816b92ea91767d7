#include "detkit/modeling/meta_arch/panoptic_fpn.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include "detkit/layers/precision.h"
#include "detkit/modeling/sampling.h"

namespace detkit::modeling {

namespace {

/// The losses Detectron2 scales by INSTANCE_LOSS_WEIGHT (its box predictor's and mask head's
/// loss weights; every cascade stage's).
bool is_instance_loss(const std::string& name) {
  return name.rfind("loss_cls", 0) == 0 || name.rfind("loss_box_reg", 0) == 0 ||
         name.rfind("loss_mask", 0) == 0;
}

}  // namespace

PanopticFPN::PanopticFPN(std::shared_ptr<Backbone> backbone,
                         std::shared_ptr<ProposalGenerator> proposal_generator,
                         std::shared_ptr<ROIHeads> roi_heads,
                         std::shared_ptr<SemSegHead> sem_seg_head, std::vector<double> pixel_mean,
                         std::vector<double> pixel_std, PanopticCombineOptions combine,
                         double instance_loss_weight)
    : GeneralizedRCNN(std::move(backbone), std::move(proposal_generator), std::move(roi_heads),
                      std::move(pixel_mean), std::move(pixel_std)),
      sem_seg_head_(register_module("sem_seg_head", std::move(sem_seg_head))),
      combine_(combine),
      instance_loss_weight_(instance_loss_weight) {}

structures::LossDict PanopticFPN::losses(const std::vector<structures::ModelInput>& batch) {
  TORCH_CHECK(is_training(), "PanopticFPN::losses needs training mode (model->train())");
  const ImageGenerators generators(batch);  // each image's sampling, when it is seeded
  const auto images = preprocess_image(batch);
  const structures::FeatureMap features = backbone()->forward(images.tensor());
  const at::Tensor targets =
      pad_sem_seg_targets(batch, {images.tensor().size(2), images.tensor().size(3)},
                          sem_seg_head_->ignore_value(), images.tensor().device(), "PanopticFPN");
  structures::LossDict losses = sem_seg_head_->losses(features, targets);
  for (auto& [name, loss] : detector_losses(batch, images, features))
    losses[name] = instance_loss_weight_ != 1.0 && is_instance_loss(name)
                       ? loss * instance_loss_weight_
                       : loss;
  return losses;
}

std::vector<structures::ModelOutput> PanopticFPN::outputs(
    const std::vector<structures::ModelInput>& batch) {
  TORCH_CHECK(!is_training(), "PanopticFPN::outputs needs eval mode (model->eval())");
  const auto images = preprocess_image(batch);
  const structures::FeatureMap features = backbone()->forward(images.tensor());
  const at::Tensor logits = sem_seg_head_->predict(features);
  std::vector<structures::Instances> detections = detect(batch, images, features);
  std::vector<structures::ModelOutput> out;
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto [h, w] = output_size(batch[i], images.image_sizes()[i]);
    structures::ModelOutput o;
    o.sem_seg = layers::fp32_if_reduced(
        sem_seg_postprocess(logits[static_cast<int64_t>(i)], images.image_sizes()[i], h, w));
    o.panoptic_seg =
        combine_semantic_and_instance_outputs(detections[i], o.sem_seg->argmax(0), combine_);
    o.instances = std::move(detections[i]);
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<structures::Instances> PanopticFPN::inference(
    const std::vector<structures::ModelInput>& batch) {
  return MetaArch::inference(batch);
}

std::shared_ptr<PanopticFPN> build_panoptic_fpn(const config::CfgNode& cfg) {
  auto backbone = build_backbone(cfg);
  const auto shapes = backbone->output_shape();
  auto proposal_generator = build_proposal_generator(cfg, shapes);
  auto roi_heads = build_roi_heads(cfg, shapes);
  auto sem_seg_head = build_sem_seg_head(cfg, shapes);
  PanopticCombineOptions combine;
  combine.overlap_thresh = cfg.get_float("MODEL.PANOPTIC_FPN.COMBINE.OVERLAP_THRESH");
  combine.stuff_area_limit = cfg.get_float("MODEL.PANOPTIC_FPN.COMBINE.STUFF_AREA_LIMIT");
  combine.instances_confidence_thresh =
      cfg.get_float("MODEL.PANOPTIC_FPN.COMBINE.INSTANCES_CONFIDENCE_THRESH");
  if (!cfg.get_bool("MODEL.PANOPTIC_FPN.COMBINE.ENABLED"))  // as Detectron2: read, warned, unused
    spdlog::warn(
        "MODEL.PANOPTIC_FPN.COMBINE.ENABLED False is no longer used (as in Detectron2): "
        "PanopticFPN always gives panoptic_seg");
  const double instance_loss_weight = cfg.get_float("MODEL.PANOPTIC_FPN.INSTANCE_LOSS_WEIGHT");
  if (instance_loss_weight != 1.0)
    spdlog::warn(
        "MODEL.PANOPTIC_FPN.INSTANCE_LOSS_WEIGHT {}: the box and mask losses are scaled by it "
        "(Detectron2 advises weights on each ROI head instead)",
        instance_loss_weight);
  return std::make_shared<PanopticFPN>(
      backbone, proposal_generator, roi_heads, sem_seg_head, cfg.get_float_list("MODEL.PIXEL_MEAN"),
      cfg.get_float_list("MODEL.PIXEL_STD"), combine, instance_loss_weight);
}

DETKIT_REGISTER_META_ARCH(PanopticFPN, [](const config::CfgNode& cfg) {
  return std::static_pointer_cast<MetaArch>(build_panoptic_fpn(cfg));
});

}  // namespace detkit::modeling
