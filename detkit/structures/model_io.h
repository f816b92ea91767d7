#pragma once
// The data/model contract: what a loader hands a model (ModelInput, Detectron2's dataset dict
// after mapping) and what a model hands back in training (the loss dict) — plain data, so data/
// and engine/ need no model header.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "detkit/structures/instances.h"

namespace detkit::structures {

/// One image as the model takes it.
struct ModelInput {
  at::Tensor image;               // (C, H, W) float, in INPUT.FORMAT channel order, 0..255, resized
  int64_t height = 0, width = 0;  // the original image size, for rescaling predictions
  std::optional<Instances> instances;  // training targets, in the resized frame
  /// Precomputed proposals (MODEL.LOAD_PROPOSALS): "proposal_boxes" and "objectness_logits", best
  /// first, in the resized frame; the model then runs no proposal generator.
  std::optional<Instances> proposals;
  /// Semantic-segmentation target (training, a dataset with sem_seg_file_name): (H, W) int64 class
  /// per pixel of the resized image, MODEL.SEM_SEG_HEAD.IGNORE_VALUE where unlabelled; the model
  /// pads it with IGNORE_VALUE to the batch size.
  std::optional<at::Tensor> sem_seg;
  std::string file_name;  // the image file it came from (Detectron2's "file_name"), for messages
  /// Seeds this image's own generator for the model's random draws in training (anchor and
  /// proposal sampling), so that they do not depend on the images batched with it. nullopt: the
  /// default generator, image after image (Detectron2's). The training loader sets it from SEED
  /// and the sample's position in the stream.
  std::optional<uint64_t> sampling_seed;
  /// The batch holding this image is padded to at least this (height, width) before the model's
  /// size divisibility rounds it up; 0 = no minimum. Set when a batch is one rank's slice of a
  /// global batch, so that every slice is padded as the whole batch would be.
  int64_t min_padded_height = 0, min_padded_width = 0;
};

/// One segment of a panoptic prediction, as Detectron2's `segments_info` entries: a thing
/// (isthing, score, category_id a thing class, instance_id its index among the image's
/// instances) or a stuff region (category_id a semantic-head class, area in pixels).
struct PanopticSegment {
  int32_t id = 0;  // its value in the id map (1, 2, ...; 0 is void)
  bool isthing = false;
  int64_t category_id = 0;   // contiguous class index
  double score = 0;          // things only
  int64_t instance_id = -1;  // things only
  int64_t area = 0;          // stuff only (Detectron2 gives no area for things)
};

/// Detectron2's `panoptic_seg`: the (H, W) int32 id map (0: void) and its segments.
struct PanopticOutput {
  at::Tensor ids;
  std::vector<PanopticSegment> segments;
};

/// What a model gives for one image in eval mode, as Detectron2's output dict: "instances"
/// (detectors), "sem_seg" ((C, H, W) float logits in the original image's size: semantic and
/// panoptic models), "panoptic_seg" (PanopticFPN), "proposals" (ProposalNetwork, held in
/// `instances` as "proposal_boxes" / "objectness_logits").
struct ModelOutput {
  std::optional<Instances> instances;
  std::optional<at::Tensor> sem_seg;
  std::optional<PanopticOutput> panoptic_seg;
};

/// `output` with every tensor on the host (a model on a GPU gives them where it computed them;
/// evaluators, listings and drawings read them on the host). No copy for a CPU model's.
inline ModelOutput on_host(ModelOutput output) {
  if (output.instances) output.instances = output.instances->to(c10::kCPU);
  if (output.sem_seg) output.sem_seg = output.sem_seg->cpu();
  if (output.panoptic_seg) output.panoptic_seg->ids = output.panoptic_seg->ids.cpu();
  return output;
}

/// Training losses by Detectron2's names ("loss_rpn_cls", "loss_cls", ...); the trainer sums them.
using LossDict = std::map<std::string, at::Tensor>;

/// Feature maps by name ("res2".."res5", "p2".."p6").
using FeatureMap = std::map<std::string, at::Tensor>;

}  // namespace detkit::structures
