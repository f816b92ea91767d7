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
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/structures/instances.h"
#include "detkit/structures/model_io.h"
#include "detkit/utils/registry.h"

namespace detkit::modeling {

class MetaArch : public torch::nn::Module {
 public:
  /// Training mode: the loss dict of a batch whose inputs carry `instances` (targets).
  virtual structures::LossDict losses(const std::vector<structures::ModelInput>& batch) = 0;
  /// Eval mode: per image "pred_boxes", "scores", "pred_classes" (and, for instance segmenters,
  /// "pred_masks" (R, H, W) bool) in the original image's size.
  virtual std::vector<structures::Instances> inference(
      const std::vector<structures::ModelInput>& batch) = 0;
  /// The device its parameters and buffers live on (CPU for a model without any).
  c10::Device device() const;
};

using MetaArchFactory = std::function<std::shared_ptr<MetaArch>(const config::CfgNode& cfg)>;

Registry<MetaArchFactory>& meta_arch_registry();

#define DETKIT_REGISTER_META_ARCH(name, ...) \
  DETKIT_REGISTER(::detkit::modeling::meta_arch_registry(), #name, __VA_ARGS__)

/// MODEL.DEVICE as a device this libtorch can use ("cpu", "cuda", "cuda:1"); anything else, or
/// "cuda" in a build without CUDA, is a detkit::Error naming the key and what the build supports.
c10::Device model_device(const config::CfgNode& cfg);

/// Builds MODEL.META_ARCHITECTURE from the config and moves it to MODEL.DEVICE. A key detkit
/// does not implement, set to a non-default value, is a detkit::Error naming it
/// (config::check_implemented).
std::shared_ptr<MetaArch> build_model(const config::CfgNode& cfg);

}  // namespace detkit::modeling
