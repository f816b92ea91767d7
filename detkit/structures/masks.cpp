#include "detkit/structures/masks.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "detkit/structures/mask_ops.h"

namespace detkit::structures {

namespace {

double shoelace_area(const Polygon& p) {
  size_t n = p.size() / 2;
  double twice = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t j = (i + n - 1) % n;  // the previous point, as Detectron2's roll by 1
    twice += p[2 * i] * p[2 * j + 1] - p[2 * i + 1] * p[2 * j];
  }
  return 0.5 * std::abs(twice);
}

std::vector<int64_t> to_index_list(const at::Tensor& indices, int64_t size) {
  at::Tensor idx = indices;
  if (idx.scalar_type() == at::kBool) {
    TORCH_CHECK(idx.dim() == 1 && idx.size(0) == size, "a bool index for ", size,
                " instances must have length ", size, ", got ", idx.sizes());
    idx = idx.nonzero().reshape({-1});
  }
  // Polygons live on the host: an index from the device is read there (a sync, as Detectron2's).
  idx = idx.reshape({-1}).to(at::kCPU, at::kLong).contiguous();
  std::vector<int64_t> out(idx.data_ptr<int64_t>(), idx.data_ptr<int64_t>() + idx.numel());
  for (auto& i : out) {
    TORCH_CHECK(i >= -size && i < size, "index ", i, " is out of range for ", size, " instances");
    if (i < 0) i += size;
  }
  return out;
}

}  // namespace

PolygonMasks::PolygonMasks(std::vector<std::vector<Polygon>> polygons)
    : polygons_(std::move(polygons)) {
  for (size_t i = 0; i < polygons_.size(); ++i)
    for (const auto& p : polygons_[i])
      TORCH_CHECK(p.size() % 2 == 0 && p.size() >= 6, "instance ", i,
                  ": a polygon needs an even number of coordinates and at least 3 points, got ",
                  p.size(), " coordinates");
}

at::Tensor PolygonMasks::area() const {
  std::vector<float> areas;
  for (const auto& instance : polygons_) {
    double a = 0;
    for (const auto& p : instance) a += shoelace_area(p);
    areas.push_back(static_cast<float>(a));
  }
  return at::tensor(areas, at::kFloat).reshape({size()});
}

Boxes PolygonMasks::get_bounding_boxes() const {
  at::Tensor boxes = at::zeros({size(), 4}, at::kFloat);
  auto acc = boxes.accessor<float, 2>();
  for (int64_t i = 0; i < size(); ++i) {
    double inf = std::numeric_limits<double>::infinity();
    double x0 = inf, y0 = inf, x1 = -inf, y1 = -inf;
    for (const auto& p : polygons_[i])
      for (size_t k = 0; k + 1 < p.size(); k += 2) {
        x0 = std::min(x0, p[k]), x1 = std::max(x1, p[k]);
        y0 = std::min(y0, p[k + 1]), y1 = std::max(y1, p[k + 1]);
      }
    if (x0 <= x1) acc[i][0] = x0, acc[i][1] = y0, acc[i][2] = x1, acc[i][3] = y1;
  }
  return Boxes(boxes);
}

at::Tensor PolygonMasks::nonempty() const {
  at::Tensor keep = at::zeros({size()}, at::kBool);
  for (int64_t i = 0; i < size(); ++i) keep[i] = !polygons_[i].empty();
  return keep;
}

void PolygonMasks::scale(double scale_x, double scale_y) {
  for (auto& instance : polygons_)
    for (auto& p : instance)
      for (size_t k = 0; k + 1 < p.size(); k += 2) p[k] *= scale_x, p[k + 1] *= scale_y;
}

PolygonMasks PolygonMasks::index(const at::Tensor& indices) const {
  std::vector<std::vector<Polygon>> picked;
  for (int64_t i : to_index_list(indices, size())) picked.push_back(polygons_[i]);
  return PolygonMasks(std::move(picked));
}

BitMasks PolygonMasks::to_bitmasks(int64_t height, int64_t width) const {
  return BitMasks::from_polygon_masks(*this, height, width);
}

at::Tensor PolygonMasks::crop_and_resize(const at::Tensor& boxes, int64_t mask_size) const {
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(0) == size() && boxes.size(1) == 4,
              "crop_and_resize needs (", size(), ", 4) boxes, got ", boxes.sizes());
  // Rasterised on the host, as Detectron2's (boxes read there, the masks moved to their device).
  at::Tensor b = boxes.detach().to(at::kCPU, at::kFloat).contiguous();
  auto acc = b.accessor<float, 2>();
  std::vector<at::Tensor> masks;
  for (int64_t i = 0; i < size(); ++i) {
    // Detectron2 computes the box size in float32 and the scaling in float64.
    const float x0 = acc[i][0], y0 = acc[i][1];
    const float w = acc[i][2] - x0, h = acc[i][3] - y0;
    const double ratio_w = mask_size / std::max<double>(w, 0.1);
    const double ratio_h = mask_size / std::max<double>(h, 0.1);
    std::vector<Polygon> local = polygons_[i];
    for (auto& p : local)
      for (size_t k = 0; k + 1 < p.size(); k += 2) {
        p[k] = (p[k] - static_cast<double>(x0)) * ratio_w;
        p[k + 1] = (p[k + 1] - static_cast<double>(y0)) * ratio_h;
      }
    masks.push_back(polygons_to_bitmask(local, mask_size, mask_size));
  }
  if (masks.empty()) return at::zeros({0, mask_size, mask_size}, boxes.options().dtype(at::kBool));
  return at::stack(masks).to(boxes.device());
}

PolygonMasks PolygonMasks::cat(const std::vector<PolygonMasks>& masks) {
  std::vector<std::vector<Polygon>> all;
  for (const auto& m : masks) all.insert(all.end(), m.polygons_.begin(), m.polygons_.end());
  return PolygonMasks(std::move(all));
}

at::Tensor polygons_to_bitmask(const std::vector<Polygon>& polygons, int64_t height,
                               int64_t width) {
  if (polygons.empty()) return at::zeros({height, width}, at::kBool);
  auto pixels = mask_ops::decode(mask_ops::from_polygons(polygons, height, width));
  return at::from_blob(pixels.data(), {height, width}, at::kByte).to(at::kBool);
}

BitMasks::BitMasks(at::Tensor tensor) {
  TORCH_CHECK(tensor.dim() == 3, "BitMasks need an (N, H, W) tensor, got ", tensor.sizes());
  tensor_ = tensor.scalar_type() == at::kBool ? std::move(tensor) : tensor.to(at::kBool);
}

at::Tensor BitMasks::area() const { return tensor_.sum({1, 2}); }

at::Tensor BitMasks::nonempty() const {
  if (!tensor_.device().is_cpu() || !tensor_.is_contiguous()) return tensor_.flatten(1).any(1);
  // Each mask's bytes scanned for its first "on" one (memchr stops there; libtorch's any() over
  // bools read them all one by one: the loader 1400 -> 1850 images/s with bitmasks, measured).
  const int64_t n = size(), pixels = tensor_.size(1) * tensor_.size(2);
  at::Tensor out = at::empty({n}, at::kBool);
  const auto* bytes = reinterpret_cast<const unsigned char*>(tensor_.data_ptr<bool>());
  bool* found = out.data_ptr<bool>();
  for (int64_t i = 0; i < n; ++i)  // (masks of no pixels have no data pointer to scan)
    found[i] = pixels > 0 && std::memchr(bytes + i * pixels, 1, static_cast<size_t>(pixels));
  return out;
}

Boxes BitMasks::get_bounding_boxes() const {
  at::Tensor boxes = at::zeros({size(), 4}, tensor_.options().dtype(at::kFloat));
  at::Tensor x_any = tensor_.any(1), y_any = tensor_.any(2);  // (N, W), (N, H)
  for (int64_t i = 0; i < size(); ++i) {
    at::Tensor xs = x_any[i].nonzero(), ys = y_any[i].nonzero();
    if (xs.numel() == 0 || ys.numel() == 0) continue;
    boxes[i][0] = xs.min().item<int64_t>();
    boxes[i][1] = ys.min().item<int64_t>();
    boxes[i][2] = xs.max().item<int64_t>() + 1;
    boxes[i][3] = ys.max().item<int64_t>() + 1;
  }
  return Boxes(boxes);
}

BitMasks BitMasks::index(const at::Tensor& indices) const {
  if (indices.scalar_type() == at::kBool) return BitMasks(tensor_.index({indices}));
  return BitMasks(tensor_.index_select(0, indices.reshape({-1}).to(at::kLong)));
}

BitMasks BitMasks::from_polygon_masks(const PolygonMasks& polygons, int64_t height, int64_t width) {
  std::vector<at::Tensor> masks;
  for (const auto& instance : polygons.polygons())
    masks.push_back(polygons_to_bitmask(instance, height, width));
  if (masks.empty()) return BitMasks(at::zeros({0, height, width}, at::kBool));
  return BitMasks(at::stack(masks));
}

BitMasks BitMasks::cat(const std::vector<BitMasks>& masks) {
  TORCH_CHECK(!masks.empty(), "BitMasks::cat needs at least one BitMasks");
  std::vector<at::Tensor> tensors;
  for (const auto& m : masks) tensors.push_back(m.tensor());
  return BitMasks(at::cat(tensors, 0));
}

}  // namespace detkit::structures
