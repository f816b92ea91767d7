#pragma once
// Backbone: image batch -> named feature maps, and how each map is shaped; backbones are built
// by name (MODEL.BACKBONE.NAME) through a registry, as in Detectron2.
#include <torch/nn/module.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/layers/shape_spec.h"
#include "detkit/structures/model_io.h"
#include "detkit/utils/registry.h"

namespace detkit::modeling {

using FeatureMap = structures::FeatureMap;

class Backbone : public torch::nn::Module {
 public:
  /// images: (N, C, H, W), normalised and padded to size_divisibility().
  virtual FeatureMap forward(const at::Tensor& images) = 0;
  /// Shapes of the features forward() returns.
  virtual layers::ShapeSpecs output_shape() const = 0;
  /// Inputs must be padded to a multiple of this (0: any size).
  virtual int64_t size_divisibility() const { return 0; }
};

/// The strides of the named features and their common channel count, for heads that read
/// several levels; `key` (e.g. "MODEL.RPN.IN_FEATURES") is named when a feature is missing or
/// the channel counts differ.
struct FeatureLevels {
  std::vector<int64_t> strides;
  int64_t channels = 0;
};
FeatureLevels feature_levels(const layers::ShapeSpecs& shapes,
                             const std::vector<std::string>& names, const std::string& key);

using BackboneFactory =
    std::function<std::shared_ptr<Backbone>(const config::CfgNode& cfg, int64_t input_channels)>;

Registry<BackboneFactory>& backbone_registry();

/// Builds MODEL.BACKBONE.NAME for images of len(MODEL.PIXEL_MEAN) channels.
std::shared_ptr<Backbone> build_backbone(const config::CfgNode& cfg);

#define DETKIT_REGISTER_BACKBONE(name, ...) \
  DETKIT_REGISTER(::detkit::modeling::backbone_registry(), #name, __VA_ARGS__)

}  // namespace detkit::modeling
