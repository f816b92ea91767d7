#pragma once
// Instance masks in the two forms Detectron2 uses: polygons (as COCO stores them, cheap to
// transform) and bitmasks (an (N, H, W) bool tensor).
#include <ATen/core/Tensor.h>

#include <vector>

#include "detkit/structures/boxes.h"

namespace detkit::structures {

/// One polygon: x0, y0, x1, y1, ... in image pixels (at least 3 points).
using Polygon = std::vector<double>;

class BitMasks;

class PolygonMasks {
 public:
  PolygonMasks() = default;
  /// One entry per instance, each a list of polygons; checks every polygon has an even number
  /// of coordinates and at least 3 points.
  explicit PolygonMasks(std::vector<std::vector<Polygon>> polygons);

  int64_t size() const { return static_cast<int64_t>(polygons_.size()); }
  const std::vector<std::vector<Polygon>>& polygons() const { return polygons_; }

  /// (N) float: summed shoelace areas of each instance's polygons (Detectron2's area()).
  at::Tensor area() const;
  /// XYXY boxes spanning every point of each instance.
  Boxes get_bounding_boxes() const;
  /// (N) bool: the instance has at least one polygon.
  at::Tensor nonempty() const;
  /// Multiplies x by scale_x and y by scale_y, in place.
  void scale(double scale_x, double scale_y);
  PolygonMasks index(const at::Tensor& indices) const;
  /// Rasterised as pycocotools does (polygon -> RLE -> union -> pixels).
  BitMasks to_bitmasks(int64_t height, int64_t width) const;
  /// Mask targets: instance i's polygons cut to boxes[i] (XYXY, (N, 4)) and rasterised on a
  /// mask_size x mask_size grid, as Detectron2's crop_and_resize. Returns (N, M, M) bool.
  at::Tensor crop_and_resize(const at::Tensor& boxes, int64_t mask_size) const;

  static PolygonMasks cat(const std::vector<PolygonMasks>& masks);

 private:
  std::vector<std::vector<Polygon>> polygons_;
};

class BitMasks {
 public:
  /// tensor: (N, H, W), bool or 0/1 integers (stored as bool).
  explicit BitMasks(at::Tensor tensor);

  const at::Tensor& tensor() const { return tensor_; }
  int64_t size() const { return tensor_.size(0); }
  int64_t height() const { return tensor_.size(1); }
  int64_t width() const { return tensor_.size(2); }

  /// (N) int64 pixel counts.
  at::Tensor area() const;
  /// (N) bool: at least one pixel set.
  at::Tensor nonempty() const;
  /// XYXY boxes [x_min, y_min, x_max + 1, y_max + 1] of the set pixels; zeros for empty masks.
  Boxes get_bounding_boxes() const;
  BitMasks index(const at::Tensor& indices) const;

  static BitMasks from_polygon_masks(const PolygonMasks& polygons, int64_t height, int64_t width);
  static BitMasks cat(const std::vector<BitMasks>& masks);

 private:
  at::Tensor tensor_;
};

/// One instance's polygons as an (H, W) bool tensor, rasterised as pycocotools does.
at::Tensor polygons_to_bitmask(const std::vector<Polygon>& polygons, int64_t height, int64_t width);

}  // namespace detkit::structures
