#pragma once
// ImageList: a batch of images of different sizes padded into one (N, C, H, W) tensor, keeping
// each image's true (height, width).
#include <ATen/core/Tensor.h>

#include <utility>
#include <vector>

namespace detkit::structures {

class ImageList {
 public:
  /// images: (C, H, W) each, same C and dtype. The batch is padded (bottom and right, with
  /// pad_value) to the largest height and width, at least `min_size` (height, width), rounded up
  /// to a multiple of size_divisibility when it is > 1.
  static ImageList from_tensors(const std::vector<at::Tensor>& images,
                                int64_t size_divisibility = 0, double pad_value = 0.0,
                                std::pair<int64_t, int64_t> min_size = {0, 0});

  const at::Tensor& tensor() const { return tensor_; }
  const std::vector<std::pair<int64_t, int64_t>>& image_sizes() const { return image_sizes_; }
  int64_t size() const { return static_cast<int64_t>(image_sizes_.size()); }
  /// Image i without its padding: a (C, h_i, w_i) view of tensor().
  at::Tensor operator[](int64_t i) const;

 private:
  ImageList(at::Tensor tensor, std::vector<std::pair<int64_t, int64_t>> sizes)
      : tensor_(std::move(tensor)), image_sizes_(std::move(sizes)) {}
  at::Tensor tensor_;
  std::vector<std::pair<int64_t, int64_t>> image_sizes_;
};

}  // namespace detkit::structures
