#pragma once
// DefaultAnchorGenerator: the anchors of the RPN on every feature map, as Detectron2's
// detectron2/modeling/anchor_generator.py (no rounding of the cell anchors).
#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/structures/boxes.h"

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

class DefaultAnchorGeneratorImpl : public torch::nn::Module {
 public:
  explicit DefaultAnchorGeneratorImpl(DefaultAnchorGeneratorOptions options);

  /// features: one map (N, C, Hi, Wi) per stride, in the order of options.strides().
  /// Returns per map the (Hi * Wi * A_i, 4) float32 anchors, location-major (row y, then
  /// column x, then cell anchor): anchor (y * Wi + x) * A_i + a is cell anchor a shifted by
  /// ((x + offset) * stride, (y + offset) * stride).
  std::vector<structures::Boxes> forward(const std::vector<at::Tensor>& features);

  /// A_i: anchors per location on each feature map.
  std::vector<int64_t> num_cell_anchors() const;
  /// The anchors per location, which must be the same on every feature map (as the RPN head
  /// predicts the same number on each).
  int64_t num_anchors() const;
  /// Each (A_i, 4) float32: the cell anchors of feature map i. Not in the state dict (they are
  /// non-persistent buffers in Detectron2), so plain members that follow the features' device.
  const std::vector<at::Tensor>& cell_anchors() const { return cell_anchors_; }
  static constexpr int64_t kBoxDim = 4;  // coordinates per anchor

  DefaultAnchorGeneratorOptions options;

 private:
  std::vector<at::Tensor> cell_anchors_;
};
TORCH_MODULE(DefaultAnchorGenerator);

}  // namespace detkit::modeling
