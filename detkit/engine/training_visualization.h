#pragma once
// Detectron2's VIS_PERIOD: every VIS_PERIOD iterations the model records one image of its step
// (GeneralizedRCNN: ground-truth boxes beside its top 20 proposals); this hook draws it and puts
// it into the trainer's storage as a PNG, which the TensorBoard writer writes as an image summary.
#include <string>

#include "detkit/engine/trainer.h"
#include "detkit/modeling/meta_arch/meta_arch.h"

namespace detkit::engine {

/// The picture: the input image (channels in `input_format`, "BGR" or "RGB") once per panel,
/// each panel's boxes drawn over it in Detectron2's instance colours, panels side by side.
/// Returns (3, H, W · panels) as an OpenCV BGR image's PNG bytes with its height and width.
struct RenderedImage {
  std::string png;
  int64_t height = 0, width = 0;
};
RenderedImage render_training_visualization(const modeling::TrainingVisualization& v,
                                            const std::string& input_format);

class TrainingVisualizationHook : public HookBase {
 public:
  TrainingVisualizationHook(int64_t period, std::string input_format)
      : period_(period), input_format_(std::move(input_format)) {}
  void before_step(Trainer& t) override;
  void after_step(Trainer& t) override;

 private:
  int64_t period_;
  std::string input_format_;
};

}  // namespace detkit::engine
