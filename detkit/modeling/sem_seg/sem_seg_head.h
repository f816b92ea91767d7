#pragma once
// Semantic-segmentation heads (Detectron2's SEM_SEG_HEADS_REGISTRY, MODEL.SEM_SEG_HEAD.NAME):
// per-pixel class logits from backbone features, for SemanticSegmentor and PanopticFPN.
//
// SemSegFPNHead (Panoptic FPN's): for each of IN_FEATURES, 3x3 convs (NORM, ReLU) each followed
// by a 2x bilinear upsampling until the map is at COMMON_STRIDE; the maps summed; a 1x1
// predictor. Parameter names as Detectron2's: "p4.0.weight", "p4.0.norm.weight", "p4.2.weight"
// (the upsamplings hold the odd indices), "predictor.weight".
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/layers/conv2d.h"
#include "detkit/layers/shape_spec.h"
#include "detkit/structures/model_io.h"
#include "detkit/utils/registry.h"

namespace detkit::modeling {

class SemSegHead : public torch::nn::Module {
 public:
  /// The logits at the head's own stride: (N, NUM_CLASSES, H / stride, W / stride) of the padded
  /// batch (Detectron2's `layers`).
  virtual at::Tensor layers(const structures::FeatureMap& features) = 0;
  /// Inference: the logits upsampled to the padded batch's size.
  virtual at::Tensor predict(const structures::FeatureMap& features) = 0;
  /// Training: {"loss_sem_seg"}; `targets` (N, H, W) int64, the padded batch's size, padded with
  /// ignore_value().
  virtual structures::LossDict losses(const structures::FeatureMap& features,
                                      const at::Tensor& targets) = 0;
  /// MODEL.SEM_SEG_HEAD.IGNORE_VALUE: the label that neither trains nor is predicted.
  virtual int64_t ignore_value() const = 0;
};

struct SemSegFPNHeadOptions {
  std::vector<std::string> in_features;  // MODEL.SEM_SEG_HEAD.IN_FEATURES
  int64_t num_classes = 54;
  int64_t conv_dims = 128;
  int64_t common_stride = 4;
  std::string norm = "GN";
  double loss_weight = 1.0;
  int64_t ignore_value = 255;
};

class SemSegFPNHead : public SemSegHead {
 public:
  /// `input_shapes`: the backbone's; each of options.in_features must be one of them with a
  /// stride that is COMMON_STRIDE times a power of two (or COMMON_STRIDE itself), else a
  /// detkit::Error naming the key.
  SemSegFPNHead(const SemSegFPNHeadOptions& options, const layers::ShapeSpecs& input_shapes);

  at::Tensor layers(const structures::FeatureMap& features) override;
  at::Tensor predict(const structures::FeatureMap& features) override;
  structures::LossDict losses(const structures::FeatureMap& features,
                              const at::Tensor& targets) override;
  int64_t ignore_value() const override { return options_.ignore_value; }

 private:
  struct ScaleHead {
    std::string feature;
    std::vector<layers::Conv2d> convs;
    bool upsample;  // each conv followed by a 2x bilinear upsampling
  };
  SemSegFPNHeadOptions options_;
  std::vector<ScaleHead> scale_heads_;  // by increasing stride, as Detectron2 sorts them
  layers::Conv2d predictor_{nullptr};
};

/// MODEL.SEM_SEG_HEAD.* as SemSegFPNHeadOptions.
SemSegFPNHeadOptions sem_seg_fpn_head_options(const config::CfgNode& cfg);

using SemSegHeadFactory = std::function<std::shared_ptr<SemSegHead>(
    const config::CfgNode& cfg, const layers::ShapeSpecs& input_shapes)>;
Registry<SemSegHeadFactory>& sem_seg_head_registry();

#define DETKIT_REGISTER_SEM_SEG_HEAD(name, ...) \
  DETKIT_REGISTER(::detkit::modeling::sem_seg_head_registry(), #name, __VA_ARGS__)

std::shared_ptr<SemSegHead> build_sem_seg_head(const config::CfgNode& cfg,
                                               const layers::ShapeSpecs& input_shapes);

/// Detectron2's sem_seg_postprocess: the (C, H, W) logits of one padded image cropped to its
/// input size (`image_size`: height, width) and resized bilinearly (align_corners false) to
/// (height, width).
at::Tensor sem_seg_postprocess(const at::Tensor& logits, std::pair<int64_t, int64_t> image_size,
                               int64_t height, int64_t width);

/// The semantic targets of a batch as one (N, H, W) int64 tensor of `padded_size` (the image
/// batch's), each input's `sem_seg` in its top-left corner, `ignore_value` elsewhere (Detectron2's
/// ImageList.from_tensors(targets, size_divisibility, ignore_value)). An input without
/// `sem_seg`, or one larger than the batch, is a detkit::Error naming its file and `model`.
at::Tensor pad_sem_seg_targets(const std::vector<structures::ModelInput>& batch,
                               std::pair<int64_t, int64_t> padded_size, int64_t ignore_value,
                               const c10::Device& device, const std::string& model);

}  // namespace detkit::modeling
