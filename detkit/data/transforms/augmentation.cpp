#include "detkit/data/transforms/augmentation.h"

#include <algorithm>
#include <string>

#include "detkit/utils/error.h"

namespace detkit::data {

ResizeShortestEdge::ResizeShortestEdge(std::vector<int64_t> short_edge_lengths, int64_t max_size,
                                       SampleStyle style)
    : lengths_(std::move(short_edge_lengths)), max_size_(max_size), style_(style) {
  if (lengths_.empty()) throw Error("ResizeShortestEdge: no short edge length given");
  if (style_ == SampleStyle::kRange && (lengths_.size() != 2 || lengths_[0] > lengths_[1])) {
    throw Error("ResizeShortestEdge: range sampling needs [min, max] with min <= max, got " +
                std::to_string(lengths_.size()) + " lengths");
  }
  for (int64_t length : lengths_) {
    if (length < 0)
      throw Error("ResizeShortestEdge: negative short edge length " + std::to_string(length));
  }
}

std::pair<int, int> ResizeShortestEdge::get_output_shape(int h, int w, int64_t short_edge,
                                                         int64_t max_size) {
  const double size = short_edge * 1.0;
  const double scale = size / std::min(h, w);
  double new_h, new_w;
  if (h < w) {
    new_h = size;
    new_w = scale * w;
  } else {
    new_h = scale * h;
    new_w = size;
  }
  if (std::max(new_h, new_w) > max_size) {
    const double rescale = max_size * 1.0 / std::max(new_h, new_w);
    new_h = new_h * rescale;
    new_w = new_w * rescale;
  }
  return {static_cast<int>(new_h + 0.5), static_cast<int>(new_w + 0.5)};
}

std::shared_ptr<const Transform> ResizeShortestEdge::get_transform(int height, int width,
                                                                   SampleRng& rng) const {
  const int64_t size = style_ == SampleStyle::kRange ? rng.randint(lengths_[0], lengths_[1])
                                                     : lengths_[rng.choice(lengths_.size())];
  if (size == 0) return std::make_shared<NoOpTransform>();
  auto [new_h, new_w] = get_output_shape(height, width, size, max_size_);
  return std::make_shared<ResizeTransform>(height, width, new_h, new_w);
}

RandomFlip::RandomFlip(double prob, bool horizontal, bool vertical)
    : prob_(prob), horizontal_(horizontal) {
  if (horizontal == vertical) {
    throw Error("RandomFlip: exactly one of horizontal and vertical must be set");
  }
  if (!(prob >= 0.0 && prob <= 1.0)) {
    throw Error("RandomFlip: probability must be in [0, 1], got " + std::to_string(prob));
  }
}

std::shared_ptr<const Transform> RandomFlip::get_transform(int height, int width,
                                                           SampleRng& rng) const {
  if (!(rng.uniform() < prob_)) return std::make_shared<NoOpTransform>();
  if (horizontal_) return std::make_shared<HFlipTransform>(width);
  return std::make_shared<VFlipTransform>(height);
}

TransformList apply_augmentations(const AugmentationList& augmentations, int height, int width,
                                  SampleRng& rng) {
  TransformList transforms;
  for (const auto& augmentation : augmentations) {
    auto transform = augmentation->get_transform(height, width, rng);
    if (auto* resize = dynamic_cast<const ResizeTransform*>(transform.get())) {
      height = resize->new_height();
      width = resize->new_width();
    }
    transforms.push_back(std::move(transform));
  }
  return transforms;
}

AugmentationList build_augmentation(const config::CfgNode& cfg, bool is_train) {
  AugmentationList augmentations;
  if (is_train) {
    const std::string style = cfg.get_string("INPUT.MIN_SIZE_TRAIN_SAMPLING");
    if (style != "choice" && style != "range") {
      throw Error("INPUT.MIN_SIZE_TRAIN_SAMPLING must be 'choice' or 'range', got '" + style + "'");
    }
    const auto lengths = cfg.get_int_list("INPUT.MIN_SIZE_TRAIN");
    if (style == "range" && lengths.size() != 2) {
      throw Error(
          "INPUT.MIN_SIZE_TRAIN must have 2 values with MIN_SIZE_TRAIN_SAMPLING 'range', "
          "got " +
          std::to_string(lengths.size()));
    }
    augmentations.push_back(std::make_shared<ResizeShortestEdge>(
        lengths, cfg.get_int("INPUT.MAX_SIZE_TRAIN"),
        style == "range" ? ResizeShortestEdge::SampleStyle::kRange
                         : ResizeShortestEdge::SampleStyle::kChoice));
    const std::string flip = cfg.get_string("INPUT.RANDOM_FLIP");
    if (flip != "horizontal" && flip != "vertical" && flip != "none") {
      throw Error("INPUT.RANDOM_FLIP must be 'horizontal', 'vertical' or 'none', got '" + flip +
                  "'");
    }
    if (flip != "none") {
      augmentations.push_back(
          std::make_shared<RandomFlip>(0.5, flip == "horizontal", flip == "vertical"));
    }
    if (cfg.get_bool("INPUT.CROP.ENABLED")) {
      throw Error(
          "INPUT.CROP.ENABLED: random cropping is not implemented in detkit; set it to "
          "False");
    }
  } else {
    augmentations.push_back(std::make_shared<ResizeShortestEdge>(
        std::vector<int64_t>{cfg.get_int("INPUT.MIN_SIZE_TEST")},
        cfg.get_int("INPUT.MAX_SIZE_TEST")));
  }
  return augmentations;
}

}  // namespace detkit::data
