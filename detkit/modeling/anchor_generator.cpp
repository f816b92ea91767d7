#include "detkit/modeling/anchor_generator.h"

#include <ATen/ATen.h>

#include <cmath>
#include <string>

#include "detkit/utils/error.h"

namespace detkit::modeling {
namespace {

// Detectron2's _broadcast_params: one list serves every feature map; otherwise one per map.
std::vector<std::vector<double>> broadcast(const std::vector<std::vector<double>>& params,
                                           size_t num_features, const std::string& name) {
  if (params.empty()) throw Error("DefaultAnchorGenerator: " + name + " cannot be empty");
  if (params.size() == 1) return std::vector<std::vector<double>>(num_features, params.front());
  if (params.size() != num_features) {
    throw Error("DefaultAnchorGenerator: got " + name + " of length " +
                std::to_string(params.size()) + " but the number of input features is " +
                std::to_string(num_features));
  }
  return params;
}

// A config value that is list[float] or list[list[float]], as the latter.
std::vector<std::vector<double>> float_lists(const config::CfgNode& cfg, const std::string& key) {
  const config::CfgValue& value = cfg.get(key);
  const auto& items = value.as_list();
  if (!items.empty() && items.front().kind() != config::CfgValue::Kind::List) {
    return {value.as_float_list()};
  }
  return value.as_float_list_list();
}

// (H * W) x and y shifts of a grid: offset * stride + (x, y) * stride, row-major.
std::pair<at::Tensor, at::Tensor> grid_offsets(int64_t height, int64_t width, int64_t stride,
                                               double offset, const at::Device& device) {
  const at::TensorOptions options = at::TensorOptions().dtype(at::kFloat).device(device);
  if (height == 0 || width == 0) return {at::empty({0}, options), at::empty({0}, options)};
  const at::Tensor shifts_x = at::arange(offset * stride, width * stride, stride, options);
  const at::Tensor shifts_y = at::arange(offset * stride, height * stride, stride, options);
  const std::vector<at::Tensor> grid = at::meshgrid({shifts_y, shifts_x}, "ij");
  return {grid[1].reshape(-1), grid[0].reshape(-1)};
}

}  // namespace

DefaultAnchorGeneratorOptions default_anchor_generator_options_from_config(
    const config::CfgNode& cfg, const std::vector<int64_t>& strides) {
  return DefaultAnchorGeneratorOptions(float_lists(cfg, "MODEL.ANCHOR_GENERATOR.SIZES"),
                                       float_lists(cfg, "MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS"),
                                       strides)
      .offset(cfg.get_float("MODEL.ANCHOR_GENERATOR.OFFSET"));
}

at::Tensor generate_cell_anchors(const std::vector<double>& sizes,
                                 const std::vector<double>& aspect_ratios) {
  std::vector<double> coordinates;
  coordinates.reserve(sizes.size() * aspect_ratios.size() * 4);
  for (double size : sizes) {
    const double area = std::pow(size, 2.0);
    for (double aspect_ratio : aspect_ratios) {
      // w * h = area and h / w = aspect_ratio.
      const double w = std::sqrt(area / aspect_ratio);
      const double h = aspect_ratio * w;
      coordinates.insert(coordinates.end(), {-w / 2.0, -h / 2.0, w / 2.0, h / 2.0});
    }
  }
  const auto count = static_cast<int64_t>(sizes.size() * aspect_ratios.size());
  return at::tensor(coordinates, at::kDouble).reshape({count, 4}).to(at::kFloat);
}

DefaultAnchorGeneratorImpl::DefaultAnchorGeneratorImpl(DefaultAnchorGeneratorOptions options_)
    : options(std::move(options_)) {
  const size_t num_features = options.strides().size();
  if (num_features == 0) throw Error("DefaultAnchorGenerator: strides cannot be empty");
  for (int64_t stride : options.strides()) {
    if (stride <= 0) {
      throw Error("DefaultAnchorGenerator: strides must be positive, got " +
                  std::to_string(stride));
    }
  }
  if (!(options.offset() >= 0.0 && options.offset() < 1.0)) {
    throw Error("DefaultAnchorGenerator: offset must be in [0, 1), got " +
                std::to_string(options.offset()));
  }
  const auto sizes = broadcast(options.sizes(), num_features, "sizes");
  const auto ratios = broadcast(options.aspect_ratios(), num_features, "aspect_ratios");
  for (size_t i = 0; i < num_features; ++i) {
    for (double s : sizes[i]) {
      if (!(s > 0)) throw Error("DefaultAnchorGenerator: sizes must be positive");
    }
    for (double r : ratios[i]) {
      if (!(r > 0)) throw Error("DefaultAnchorGenerator: aspect_ratios must be positive");
    }
    cell_anchors_.push_back(generate_cell_anchors(sizes[i], ratios[i]));
  }
}

std::vector<int64_t> DefaultAnchorGeneratorImpl::num_cell_anchors() const {
  std::vector<int64_t> counts;
  for (const at::Tensor& anchors : cell_anchors_) counts.push_back(anchors.size(0));
  return counts;
}

int64_t AnchorGenerator::num_anchors() const {
  const std::vector<int64_t> counts = num_cell_anchors();
  if (counts.empty()) throw Error("anchor generator: no feature maps, so no anchors per location");
  for (int64_t count : counts) {
    if (count != counts.front()) {
      throw Error("anchor generator: each feature map must have the same number of anchors per "
                  "location (MODEL.ANCHOR_GENERATOR.SIZES x ASPECT_RATIOS), got " +
                  std::to_string(counts.front()) + " and " + std::to_string(count));
    }
  }
  return counts.front();
}

Registry<AnchorGeneratorFactory>& anchor_generator_registry() {
  static Registry<AnchorGeneratorFactory> registry(
      "anchor generator (MODEL.ANCHOR_GENERATOR.NAME)");
  return registry;
}

std::shared_ptr<AnchorGenerator> build_anchor_generator(const config::CfgNode& cfg,
                                                        const std::vector<int64_t>& strides) {
  return anchor_generator_registry().get(cfg.get_string("MODEL.ANCHOR_GENERATOR.NAME"))(cfg,
                                                                                        strides);
}

DETKIT_REGISTER_ANCHOR_GENERATOR(DefaultAnchorGenerator, [](const config::CfgNode& cfg,
                                                            const std::vector<int64_t>& strides) {
  return std::make_shared<DefaultAnchorGeneratorImpl>(
      default_anchor_generator_options_from_config(cfg, strides));
});

std::vector<structures::Boxes> DefaultAnchorGeneratorImpl::forward(
    const std::vector<at::Tensor>& features) {
  TORCH_CHECK(features.size() == cell_anchors_.size(), "DefaultAnchorGenerator: got ",
              features.size(), " feature maps for ", cell_anchors_.size(), " strides");
  std::vector<structures::Boxes> anchors;
  for (size_t i = 0; i < features.size(); ++i) {
    const at::Tensor& feature = features[i];
    TORCH_CHECK(feature.dim() >= 2, "DefaultAnchorGenerator: feature map ", i,
                " must be (..., H, W), got ", feature.sizes());
    const int64_t height = feature.size(-2), width = feature.size(-1);
    const at::Tensor base = cell_anchors_[i].to(feature.device());
    auto [shift_x, shift_y] =
        grid_offsets(height, width, options.strides()[i], options.offset(), feature.device());
    const at::Tensor shifts = at::stack({shift_x, shift_y, shift_x, shift_y}, 1);  // (H * W, 4)
    anchors.emplace_back((shifts.view({-1, 1, 4}) + base.view({1, -1, 4})).reshape({-1, 4}));
  }
  return anchors;
}

}  // namespace detkit::modeling
