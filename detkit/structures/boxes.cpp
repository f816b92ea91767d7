#include "detkit/structures/boxes.h"

#include <ATen/ATen.h>

namespace detkit::structures {

Boxes::Boxes() : tensor_(at::zeros({0, 4}, at::kFloat)) {}

Boxes::Boxes(at::Tensor tensor) {
  if (tensor.numel() == 0) tensor = tensor.reshape({0, 4});
  TORCH_CHECK(tensor.dim() == 2 && tensor.size(1) == 4, "Boxes need an (N, 4) tensor, got ",
              tensor.sizes());
  TORCH_CHECK(tensor.is_floating_point(), "Boxes need a floating-point tensor, got ",
              tensor.scalar_type());
  tensor_ = std::move(tensor);
}

at::Tensor Boxes::area() const {
  return (tensor_.select(1, 2) - tensor_.select(1, 0)) * (tensor_.select(1, 3) - tensor_.select(1, 1));
}

at::Tensor Boxes::centers() const {
  return (tensor_.narrow(1, 0, 2) + tensor_.narrow(1, 2, 2)) / 2;
}

void Boxes::clip(int64_t height, int64_t width) {
  TORCH_CHECK(at::isfinite(tensor_).all().item<bool>(), "Box tensor contains infinite or NaN!");
  // Out of place, as Detectron2's: clamping the column views in place fails under autograd
  // ("a view ... is being modified inplace") when the boxes come from a differentiable op.
  tensor_ = at::stack({tensor_.select(1, 0).clamp(0, width), tensor_.select(1, 1).clamp(0, height),
                       tensor_.select(1, 2).clamp(0, width), tensor_.select(1, 3).clamp(0, height)},
                      /*dim=*/1);
}

at::Tensor Boxes::nonempty(double threshold) const {
  auto widths = tensor_.select(1, 2) - tensor_.select(1, 0);
  auto heights = tensor_.select(1, 3) - tensor_.select(1, 1);
  return (widths > threshold).logical_and_(heights > threshold);
}

at::Tensor Boxes::inside_box(int64_t height, int64_t width, int64_t boundary_threshold) const {
  double t = static_cast<double>(boundary_threshold);
  return (tensor_.select(1, 0) >= -t)
      .logical_and_(tensor_.select(1, 1) >= -t)
      .logical_and_(tensor_.select(1, 2) < width + t)
      .logical_and_(tensor_.select(1, 3) < height + t);
}

void Boxes::scale(double scale_x, double scale_y) {
  tensor_.select(1, 0).mul_(scale_x);
  tensor_.select(1, 2).mul_(scale_x);
  tensor_.select(1, 1).mul_(scale_y);
  tensor_.select(1, 3).mul_(scale_y);
}

Boxes Boxes::index(const at::Tensor& indices) const {
  if (indices.scalar_type() == at::kBool) {
    TORCH_CHECK(indices.dim() == 1 && indices.size(0) == size(), "a bool index for ", size(),
                " boxes must have length ", size(), ", got ", indices.sizes());
    return Boxes(tensor_.index({indices}));
  }
  return Boxes(tensor_.index_select(0, indices.reshape({-1}).to(at::kLong)));
}

Boxes Boxes::cat(const std::vector<Boxes>& boxes) {
  if (boxes.empty()) return Boxes();
  std::vector<at::Tensor> tensors;
  for (const auto& b : boxes) tensors.push_back(b.tensor());
  return Boxes(at::cat(tensors, 0));
}

at::Tensor pairwise_intersection(const Boxes& a, const Boxes& b) {
  const auto& ta = a.tensor();
  const auto& tb = b.tensor();
  auto top_left = at::max(ta.narrow(1, 0, 2).unsqueeze(1), tb.narrow(1, 0, 2).unsqueeze(0));
  auto bottom_right = at::min(ta.narrow(1, 2, 2).unsqueeze(1), tb.narrow(1, 2, 2).unsqueeze(0));
  auto wh = (bottom_right - top_left).clamp_min_(0);
  return wh.select(2, 0) * wh.select(2, 1);
}

at::Tensor pairwise_iou(const Boxes& a, const Boxes& b) {
  auto inter = pairwise_intersection(a, b);
  auto union_area = a.area().unsqueeze(1) + b.area().unsqueeze(0) - inter;
  return at::where(inter > 0, inter / union_area, at::zeros({1}, inter.options()));
}

at::Tensor pairwise_ioa(const Boxes& a, const Boxes& b) {
  auto inter = pairwise_intersection(a, b);
  auto area_b = b.area().unsqueeze(0);
  return at::where(inter > 0, inter / area_b, at::zeros({1}, inter.options()));
}

}  // namespace detkit::structures
