#include "detkit/modeling/meta_arch/semantic_segmentor.h"

#include <ATen/ATen.h>

#include "detkit/layers/precision.h"
#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/modeling/meta_arch/preprocess.h"

namespace detkit::modeling {

SemanticSegmentor::SemanticSegmentor(std::shared_ptr<Backbone> backbone,
                                     std::shared_ptr<SemSegHead> sem_seg_head,
                                     std::vector<double> pixel_mean, std::vector<double> pixel_std)
    : backbone_(register_module("backbone", std::move(backbone))),
      sem_seg_head_(register_module("sem_seg_head", std::move(sem_seg_head))) {
  std::tie(pixel_mean_, pixel_std_) = pixel_normalization(pixel_mean, pixel_std);
}

structures::ImageList SemanticSegmentor::preprocess_image(
    const std::vector<structures::ModelInput>& batch) const {
  return normalize_and_pad_images(batch, pixel_mean_, pixel_std_, backbone_->size_divisibility(),
                                  "SemanticSegmentor");
}

void SemanticSegmentor::to(torch::Device device, bool non_blocking) {
  MetaArch::to(device, non_blocking);
  pixel_mean_ = pixel_mean_.to(device);
  pixel_std_ = pixel_std_.to(device);
}

structures::LossDict SemanticSegmentor::losses(const std::vector<structures::ModelInput>& batch) {
  TORCH_CHECK(is_training(), "SemanticSegmentor::losses needs training mode (model->train())");
  const auto images = preprocess_image(batch);
  const structures::FeatureMap features = backbone_->forward(images.tensor());
  const at::Tensor targets = pad_sem_seg_targets(
      batch, {images.tensor().size(2), images.tensor().size(3)}, sem_seg_head_->ignore_value(),
      images.tensor().device(), "SemanticSegmentor");
  return sem_seg_head_->losses(features, targets);
}

std::vector<structures::ModelOutput> SemanticSegmentor::outputs(
    const std::vector<structures::ModelInput>& batch) {
  TORCH_CHECK(!is_training(), "SemanticSegmentor::outputs needs eval mode (model->eval())");
  const auto images = preprocess_image(batch);
  const at::Tensor logits = sem_seg_head_->predict(backbone_->forward(images.tensor()));
  std::vector<structures::ModelOutput> out;
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto [h, w] = output_size(batch[i], images.image_sizes()[i]);
    structures::ModelOutput o;
    o.sem_seg = layers::fp32_if_reduced(
        sem_seg_postprocess(logits[static_cast<int64_t>(i)], images.image_sizes()[i], h, w));
    out.push_back(std::move(o));
  }
  return out;
}

DETKIT_REGISTER_META_ARCH(SemanticSegmentor, [](const config::CfgNode& cfg) {
  auto backbone = build_backbone(cfg);
  auto head = build_sem_seg_head(cfg, backbone->output_shape());
  return std::static_pointer_cast<MetaArch>(
      std::make_shared<SemanticSegmentor>(backbone, head, cfg.get_float_list("MODEL.PIXEL_MEAN"),
                                          cfg.get_float_list("MODEL.PIXEL_STD")));
});

}  // namespace detkit::modeling
