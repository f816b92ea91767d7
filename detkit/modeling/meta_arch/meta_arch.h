#pragma once
// The model interface (Detectron2's meta-architecture): what the trainer, evaluation, the
// benchmark, inference and model analysis use of a model, and nothing more. GeneralizedRCNN is
// one implementation; a new model registers a factory under its MODEL.META_ARCHITECTURE name:
//
//   class MyDetector : public MetaArch { ... losses(), inference() ... };
//   DETKIT_REGISTER_META_ARCH(MyDetector, [](const config::CfgNode& cfg) {
//     return std::make_shared<MyDetector>(cfg); });
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/structures/instances.h"
#include "detkit/structures/model_io.h"
#include "detkit/utils/registry.h"

namespace detkit::modeling {

/// One training step as Detectron2's VIS_PERIOD shows it: one input image, with sets of boxes
/// drawn over copies of it side by side (R-CNN: ground truth, then the top 20 proposals).
struct TrainingVisualization {
  std::string name;                // "Left: GT bounding boxes;  Right: Predicted proposals"
  at::Tensor image;                // (3, H, W) float 0..255 in INPUT.FORMAT order, as fed
  std::vector<at::Tensor> panels;  // per panel, (N, 4) XYXY boxes in the image's pixels
};

class MetaArch : public torch::nn::Module {
 public:
  /// Asks the next losses() to record what it would show of its step (for the models that can:
  /// GeneralizedRCNN); take_training_visualization() then returns it, once.
  void request_training_visualization() { visualization_requested_ = true; }
  std::optional<TrainingVisualization> take_training_visualization();

  /// Training mode: the loss dict of a batch whose inputs carry `instances` (targets).
  virtual structures::LossDict losses(const std::vector<structures::ModelInput>& batch) = 0;
  /// Eval mode: per image "pred_boxes", "scores", "pred_classes" (and, for instance segmenters,
  /// "pred_masks" (R, H, W) bool) in the original image's size. By default the instances of
  /// outputs(); a model whose outputs hold none (SemanticSegmentor) is an error naming it.
  virtual std::vector<structures::Instances> inference(
      const std::vector<structures::ModelInput>& batch);
  /// Eval mode: everything the model gives per image (Detectron2's output dicts: instances,
  /// sem_seg, panoptic_seg). By default inference()'s instances. A model overrides at least one
  /// of the two.
  virtual std::vector<structures::ModelOutput> outputs(
      const std::vector<structures::ModelInput>& batch);
  /// MODEL.META_ARCHITECTURE's name, for messages.
  virtual std::string name() const { return "this model"; }
  /// The device its parameters and buffers live on (CPU for a model without any).
  c10::Device device() const;

 protected:
  /// For losses(): whether this call should record a visualization, and its record.
  bool training_visualization_requested() const { return visualization_requested_; }
  void record_training_visualization(TrainingVisualization v) {  // answers the request
    visualization_ = std::move(v);
    visualization_requested_ = false;
  }

 private:
  bool visualization_requested_ = false;
  std::optional<TrainingVisualization> visualization_;
};

using MetaArchFactory = std::function<std::shared_ptr<MetaArch>(const config::CfgNode& cfg)>;

Registry<MetaArchFactory>& meta_arch_registry();

#define DETKIT_REGISTER_META_ARCH(name, ...) \
  DETKIT_REGISTER(::detkit::modeling::meta_arch_registry(), #name, __VA_ARGS__)

/// MODEL.DEVICE as a device this libtorch can use ("cpu", "cuda", "cuda:1"); anything else, or
/// "cuda" in a build without CUDA, is a detkit::Error naming the key and what the build supports.
c10::Device model_device(const config::CfgNode& cfg);

/// Builds MODEL.META_ARCHITECTURE from the config and moves it to MODEL.DEVICE; sets the
/// process's convolution algorithm from CONV_ALGORITHM (layers::set_conv_algorithm). A key detkit
/// does not implement, set to a non-default value, is a detkit::Error naming it
/// (config::check_implemented).
std::shared_ptr<MetaArch> build_model(const config::CfgNode& cfg);

}  // namespace detkit::modeling
