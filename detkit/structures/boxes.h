#pragma once
// Boxes: an (N, 4) float tensor of XYXY_ABS boxes with the geometry R-CNN needs.
#include <ATen/core/Tensor.h>

#include <vector>

namespace detkit::structures {

class Boxes {
 public:
  Boxes();  // no boxes: a (0, 4) float tensor
  /// tensor: (N, 4), floating point; an empty tensor of any shape becomes (0, 4).
  explicit Boxes(at::Tensor tensor);

  const at::Tensor& tensor() const { return tensor_; }
  int64_t size() const { return tensor_.size(0); }

  /// (N) areas (x1 - x0) * (y1 - y0).
  at::Tensor area() const;
  /// (N, 2) box centres.
  at::Tensor centers() const;
  /// Clamps every coordinate into the image: x into [0, width], y into [0, height]. The Boxes
  /// takes a new tensor (another holder of the old one keeps the old values), so this works on
  /// boxes autograd tracks.
  void clip(int64_t height, int64_t width);
  /// (N) bool: width and height both greater than `threshold`.
  at::Tensor nonempty(double threshold = 0.0) const;
  /// (N) bool: the box lies inside the image, allowing `boundary_threshold` pixels outside.
  at::Tensor inside_box(int64_t height, int64_t width, int64_t boundary_threshold = 0) const;
  /// Multiplies x by scale_x and y by scale_y, in place.
  void scale(double scale_x, double scale_y);
  /// The boxes picked by an int64 index tensor or a bool mask of length N.
  Boxes index(const at::Tensor& indices) const;
  Boxes clone() const { return Boxes(tensor_.clone()); }

  static Boxes cat(const std::vector<Boxes>& boxes);

 private:
  at::Tensor tensor_;
};

/// (N, M) intersection areas of every box in a with every box in b.
at::Tensor pairwise_intersection(const Boxes& a, const Boxes& b);
/// (N, M) IoU; 0 where the union is 0.
at::Tensor pairwise_iou(const Boxes& a, const Boxes& b);
/// (N, M) intersection over the area of b's box; 0 where that area is 0.
at::Tensor pairwise_ioa(const Boxes& a, const Boxes& b);

}  // namespace detkit::structures
