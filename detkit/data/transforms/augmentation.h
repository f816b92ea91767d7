#pragma once
// Augmentations (Detectron2's T.Augmentation): each draws a Transform for an image of a given
// size from the sample's SampleRng. The draws happen in list order, one sample at a time.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/data/transforms/sample_rng.h"
#include "detkit/data/transforms/transform.h"

namespace detkit::data {

class Augmentation {
 public:
  virtual ~Augmentation() = default;
  /// The transform for an image of (height, width).
  virtual std::shared_ptr<const Transform> get_transform(int height, int width,
                                                         SampleRng& rng) const = 0;
};

using AugmentationList = std::vector<std::shared_ptr<const Augmentation>>;

/// Resizes so the short side is a drawn length, unless the long side would then exceed max_size
/// (then the long side is max_size). kChoice draws one of the lengths, kRange an integer in
/// [lengths[0], lengths[1]]. A drawn length of 0 leaves the image as it is.
class ResizeShortestEdge : public Augmentation {
 public:
  enum class SampleStyle { kChoice, kRange };
  ResizeShortestEdge(std::vector<int64_t> short_edge_lengths, int64_t max_size,
                     SampleStyle style = SampleStyle::kChoice);
  std::shared_ptr<const Transform> get_transform(int height, int width,
                                                 SampleRng& rng) const override;

  /// (new_h, new_w) exactly as Detectron2 computes it: scale = size / min(h, w); the short side
  /// becomes size and the long side scale * side; if the longer exceeds max_size both are
  /// multiplied by max_size / longer; then each is rounded as int(x + 0.5).
  static std::pair<int, int> get_output_shape(int h, int w, int64_t short_edge, int64_t max_size);

 private:
  std::vector<int64_t> lengths_;
  int64_t max_size_;
  SampleStyle style_;
};

/// Flips with probability `prob`: one uniform draw u, flipped when u < prob.
class RandomFlip : public Augmentation {
 public:
  RandomFlip(double prob, bool horizontal, bool vertical);
  std::shared_ptr<const Transform> get_transform(int height, int width,
                                                 SampleRng& rng) const override;

 private:
  double prob_;
  bool horizontal_;
};

/// Cuts a random window out (Detectron2's RandomCrop, INPUT.CROP.TYPE and INPUT.CROP.SIZE): the
/// window's (height, width) for an (h, w) image is, by type,
///   "relative":       (int(h * s0 + 0.5), int(w * s1 + 0.5));
///   "relative_range": as "relative" with s0, s1 drawn in [s0, 1] and [s1, 1] (two uniform draws;
///                     the sizes float32 first, as Detectron2's np.float32 array);
///   "absolute":       (min(s0, h), min(s1, w));
///   "absolute_range": an integer drawn in [min(h, s0), min(h, s1)], then one in [min(w, s0),
///                     min(w, s1)];
/// then its top edge is drawn in [0, h - height] and its left edge in [0, w - width].
class RandomCrop : public Augmentation {
 public:
  enum class Type { kRelative, kRelativeRange, kAbsolute, kAbsoluteRange };
  /// `type` one of the four names above; `size` two values (see there). Errors name the value.
  RandomCrop(const std::string& type, std::vector<double> size);
  std::shared_ptr<const Transform> get_transform(int height, int width,
                                                 SampleRng& rng) const override;
  /// The window's (height, width) for an image of (height, width); draws as get_transform does.
  std::pair<int, int> get_crop_size(int height, int width, SampleRng& rng) const;

 private:
  Type type_;
  std::vector<double> size_;
};

/// Draws every augmentation's transform in order, each seeing the size the previous ones made.
TransformList apply_augmentations(const AugmentationList& augmentations, int height, int width,
                                  SampleRng& rng);

/// Detectron2's build_augmentation: ResizeShortestEdge from INPUT.MIN_SIZE_TRAIN,
/// MAX_SIZE_TRAIN, MIN_SIZE_TRAIN_SAMPLING (training) or MIN_SIZE_TEST, MAX_SIZE_TEST; then for
/// training RandomFlip(0.5) as INPUT.RANDOM_FLIP says ("horizontal", "vertical", "none"). For
/// training with INPUT.CROP.ENABLED, RandomCrop(INPUT.CROP.TYPE, INPUT.CROP.SIZE) goes first, as
/// Detectron2's DatasetMapper.from_config inserts it.
AugmentationList build_augmentation(const config::CfgNode& cfg, bool is_train);

}  // namespace detkit::data
