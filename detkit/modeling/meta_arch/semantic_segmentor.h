#pragma once
// SemanticSegmentor (Detectron2's): normalise and pad the images, backbone -> semantic head.
// Training returns {"loss_sem_seg"}; inference returns per image "sem_seg", the (NUM_CLASSES, H,
// W) logits in the original image's size (sem_seg_postprocess). Child names: backbone,
// sem_seg_head — so state dicts match Detectron2's.
#include <memory>
#include <string>
#include <vector>

#include "detkit/modeling/backbone/backbone.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/modeling/sem_seg/sem_seg_head.h"

namespace detkit::modeling {

class SemanticSegmentor : public MetaArch {
 public:
  SemanticSegmentor(std::shared_ptr<Backbone> backbone, std::shared_ptr<SemSegHead> sem_seg_head,
                    std::vector<double> pixel_mean, std::vector<double> pixel_std);

  /// Training mode: "loss_sem_seg" against each input's `sem_seg`.
  structures::LossDict losses(const std::vector<structures::ModelInput>& batch) override;
  /// Eval mode: "sem_seg" per image (no instances).
  std::vector<structures::ModelOutput> outputs(
      const std::vector<structures::ModelInput>& batch) override;
  std::string name() const override { return "SemanticSegmentor"; }
  void to(torch::Device device, bool non_blocking = false) override;
  using MetaArch::to;

  structures::ImageList preprocess_image(const std::vector<structures::ModelInput>& batch) const;
  const std::shared_ptr<Backbone>& backbone() const { return backbone_; }
  const std::shared_ptr<SemSegHead>& sem_seg_head() const { return sem_seg_head_; }

 private:
  std::shared_ptr<Backbone> backbone_;
  std::shared_ptr<SemSegHead> sem_seg_head_;
  at::Tensor pixel_mean_, pixel_std_;  // (C, 1, 1); not in the state dict, as in Detectron2
};

}  // namespace detkit::modeling
