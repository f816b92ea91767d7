#pragma once
// Anchor generators, chosen by MODEL.ANCHOR_GENERATOR.NAME (Detectron2's ANCHOR_GENERATOR_REGISTRY):
// the AnchorGenerator interface its users (the RPN, RetinaNet) hold, and DefaultAnchorGenerator,
// as Detectron2's detectron2/modeling/anchor_generator.py (no rounding of the cell anchors).
#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/structures/boxes.h"
#include "detkit/utils/registry.h"

namespace detkit::modeling {

struct DefaultAnchorGeneratorOptions {
  DefaultAnchorGeneratorOptions(std::vector<std::vector<double>> sizes,
                                std::vector<std::vector<double>> aspect_ratios,
                                std::vector<int64_t> strides)
      : sizes_(std::move(sizes)),
        aspect_ratios_(std::move(aspect_ratios)),
        strides_(std::move(strides)) {}

  /// sizes[i]: anchor sizes (square roots of anchor areas, in input-image pixels) on feature map
  /// i. A single list is used on every feature map.
  TORCH_ARG(std::vector<std::vector<double>>, sizes);
  /// aspect_ratios[i]: anchor height / width ratios on feature map i; a single list is used on
  /// every feature map.
  TORCH_ARG(std::vector<std::vector<double>>, aspect_ratios);
  /// Stride of each feature map, in input-image pixels.
  TORCH_ARG(std::vector<int64_t>, strides);
  /// Where the first anchor's centre lies, as a fraction of the stride, in [0, 1). Detectron2's
  /// class defaults to 0.5; its config (MODEL.ANCHOR_GENERATOR.OFFSET) to 0.0.
  TORCH_ARG(double, offset) = 0.5;
};

/// Options from MODEL.ANCHOR_GENERATOR.{SIZES, ASPECT_RATIOS, OFFSET}; strides: the stride of
/// each feature map the RPN reads (4, 8, 16, 32, 64 for p2..p6).
DefaultAnchorGeneratorOptions default_anchor_generator_options_from_config(
    const config::CfgNode& cfg, const std::vector<int64_t>& strides);

/// (len(sizes) * len(aspect_ratios), 4) float32 XYXY anchors centred at (0, 0): for each size,
/// for each ratio, w = sqrt(size^2 / ratio), h = ratio * w, box (-w/2, -h/2, w/2, h/2).
at::Tensor generate_cell_anchors(const std::vector<double>& sizes,
                                 const std::vector<double>& aspect_ratios);

/// What the users of anchors see: anchors per feature map, and how many per location.
class AnchorGenerator : public torch::nn::Module {
 public:
  /// features: one map (N, C, Hi, Wi) per feature level the generator was built for.
  /// Returns per map its (Hi * Wi * A_i, box_dim) anchors.
  virtual std::vector<structures::Boxes> forward(const std::vector<at::Tensor>& features) = 0;
  /// A_i: anchors per location on each feature map.
  virtual std::vector<int64_t> num_cell_anchors() const = 0;
  /// The anchors per location, which must be the same on every feature map (as the heads
  /// predict the same number on each); otherwise a detkit::Error.
  int64_t num_anchors() const;
  /// Coordinates per anchor: 4 (XYXY); a rotated generator's would be 5.
  virtual int64_t box_dim() const { return 4; }
};

/// Builds an anchor generator for feature maps of these strides (in the order the user passes
/// the maps to forward()).
using AnchorGeneratorFactory = std::function<std::shared_ptr<AnchorGenerator>(
    const config::CfgNode& cfg, const std::vector<int64_t>& strides)>;
Registry<AnchorGeneratorFactory>& anchor_generator_registry();

#define DETKIT_REGISTER_ANCHOR_GENERATOR(name, ...) \
  DETKIT_REGISTER(::detkit::modeling::anchor_generator_registry(), #name, __VA_ARGS__)

/// The generator MODEL.ANCHOR_GENERATOR.NAME names.
std::shared_ptr<AnchorGenerator> build_anchor_generator(const config::CfgNode& cfg,
                                                        const std::vector<int64_t>& strides);

class DefaultAnchorGeneratorImpl : public AnchorGenerator {
 public:
  explicit DefaultAnchorGeneratorImpl(DefaultAnchorGeneratorOptions options);

  /// features: one map (N, C, Hi, Wi) per stride, in the order of options.strides().
  /// Returns per map the (Hi * Wi * A_i, 4) float32 anchors, location-major (row y, then
  /// column x, then cell anchor): anchor (y * Wi + x) * A_i + a is cell anchor a shifted by
  /// ((x + offset) * stride, (y + offset) * stride).
  std::vector<structures::Boxes> forward(const std::vector<at::Tensor>& features) override;

  std::vector<int64_t> num_cell_anchors() const override;
  /// Each (A_i, 4) float32: the cell anchors of feature map i. Not in the state dict (they are
  /// non-persistent buffers in Detectron2), so plain members that follow the features' device.
  const std::vector<at::Tensor>& cell_anchors() const { return cell_anchors_; }

  DefaultAnchorGeneratorOptions options;

 private:
  std::vector<at::Tensor> cell_anchors_;
};
TORCH_MODULE(DefaultAnchorGenerator);

}  // namespace detkit::modeling
