#include "detkit/data/transforms/augmentation.h"

#include <algorithm>
#include <cmath>
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

namespace {

RandomCrop::Type crop_type(const std::string& name) {
  if (name == "relative") return RandomCrop::Type::kRelative;
  if (name == "relative_range") return RandomCrop::Type::kRelativeRange;
  if (name == "absolute") return RandomCrop::Type::kAbsolute;
  if (name == "absolute_range") return RandomCrop::Type::kAbsoluteRange;
  throw Error(
      "INPUT.CROP.TYPE must be 'relative_range', 'relative', 'absolute' or "
      "'absolute_range', got '" +
      name + "'");
}

std::string crop_size_text(const std::vector<double>& size) {
  std::string text;
  for (double v : size) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return "[" + text + "]";
}

}  // namespace

RandomCrop::RandomCrop(const std::string& type, std::vector<double> size)
    : type_(crop_type(type)), size_(std::move(size)) {
  if (size_.size() != 2)
    throw Error("INPUT.CROP.SIZE must have 2 values, got " + crop_size_text(size_));
  const bool relative = type_ == Type::kRelative || type_ == Type::kRelativeRange;
  for (double v : size_) {
    if (relative ? !(v > 0.0 && v <= 1.0) : !(v >= 1.0 && v == std::floor(v))) {
      throw Error(
          "INPUT.CROP.SIZE " + crop_size_text(size_) + " with INPUT.CROP.TYPE '" + type + "': " +
          (relative ? "each value must be in (0, 1]" : "each value must be an integer >= 1"));
    }
  }
  if (type_ == Type::kAbsoluteRange && size_[0] > size_[1]) {
    throw Error("INPUT.CROP.SIZE " + crop_size_text(size_) +
                " with INPUT.CROP.TYPE 'absolute_range': the first value (min) must not exceed the "
                "second (max)");
  }
}

std::pair<int, int> RandomCrop::get_crop_size(int h, int w, SampleRng& rng) const {
  switch (type_) {
    case Type::kRelative:
      return {static_cast<int>(h * size_[0] + 0.5), static_cast<int>(w * size_[1] + 0.5)};
    case Type::kRelativeRange: {
      const double s0 = static_cast<float>(size_[0]), s1 = static_cast<float>(size_[1]);
      const double u0 = rng.uniform(), u1 = rng.uniform();
      const double ch = s0 + u0 * (1 - s0), cw = s1 + u1 * (1 - s1);
      return {static_cast<int>(h * ch + 0.5), static_cast<int>(w * cw + 0.5)};
    }
    case Type::kAbsolute:
      return {static_cast<int>(std::min<double>(size_[0], h)),
              static_cast<int>(std::min<double>(size_[1], w))};
    case Type::kAbsoluteRange: {
      const auto lo = static_cast<int64_t>(size_[0]), hi = static_cast<int64_t>(size_[1]);
      const auto ch = rng.randint(std::min<int64_t>(h, lo), std::min<int64_t>(h, hi));
      const auto cw = rng.randint(std::min<int64_t>(w, lo), std::min<int64_t>(w, hi));
      return {static_cast<int>(ch), static_cast<int>(cw)};
    }
  }
  throw Error("RandomCrop: unknown type");
}

std::shared_ptr<const Transform> RandomCrop::get_transform(int height, int width,
                                                           SampleRng& rng) const {
  const auto [crop_h, crop_w] = get_crop_size(height, width, rng);
  if (crop_h < 1 || crop_w < 1 || crop_h > height || crop_w > width) {
    throw Error("RandomCrop: a " + std::to_string(crop_w) + "x" + std::to_string(crop_h) +
                " window (width x height, INPUT.CROP.SIZE " + crop_size_text(size_) +
                ") does not fit a " + std::to_string(width) + "x" + std::to_string(height) +
                " image");
  }
  const auto y0 = static_cast<int>(rng.randint(0, height - crop_h));
  const auto x0 = static_cast<int>(rng.randint(0, width - crop_w));
  return std::make_shared<CropTransform>(x0, y0, crop_w, crop_h);
}

TransformList apply_augmentations(const AugmentationList& augmentations, int height, int width,
                                  SampleRng& rng) {
  TransformList transforms;
  for (const auto& augmentation : augmentations) {
    auto transform = augmentation->get_transform(height, width, rng);
    if (auto* resize = dynamic_cast<const ResizeTransform*>(transform.get())) {
      height = resize->new_height();
      width = resize->new_width();
    } else if (auto* crop = dynamic_cast<const CropTransform*>(transform.get())) {
      height = crop->new_height();
      width = crop->new_width();
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
      augmentations.insert(augmentations.begin(),
                           std::make_shared<RandomCrop>(cfg.get_string("INPUT.CROP.TYPE"),
                                                        cfg.get_float_list("INPUT.CROP.SIZE")));
    }
  } else {
    augmentations.push_back(std::make_shared<ResizeShortestEdge>(
        std::vector<int64_t>{cfg.get_int("INPUT.MIN_SIZE_TEST")},
        cfg.get_int("INPUT.MAX_SIZE_TEST")));
  }
  return augmentations;
}

}  // namespace detkit::data
