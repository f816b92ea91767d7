#include "detkit/structures/image_list.h"

#include <ATen/ATen.h>

namespace detkit::structures {

ImageList ImageList::from_tensors(const std::vector<at::Tensor>& images, int64_t size_divisibility,
                                  double pad_value, std::pair<int64_t, int64_t> min_size) {
  TORCH_CHECK(!images.empty(), "ImageList needs at least one image");
  const at::Tensor& first = images.front();
  int64_t max_h = min_size.first, max_w = min_size.second;
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (size_t i = 0; i < images.size(); ++i) {
    const at::Tensor& image = images[i];
    TORCH_CHECK(image.dim() == 3 && image.size(0) == first.size(0), "image ", i,
                " must be (C, H, W) with C = ", first.size(0), ", got ", image.sizes());
    TORCH_CHECK(image.scalar_type() == first.scalar_type(), "image ", i, " has dtype ",
                image.scalar_type(), ", image 0 has ", first.scalar_type());
    sizes.emplace_back(image.size(1), image.size(2));
    max_h = std::max(max_h, image.size(1));
    max_w = std::max(max_w, image.size(2));
  }
  if (size_divisibility > 1) {
    max_h = (max_h + size_divisibility - 1) / size_divisibility * size_divisibility;
    max_w = (max_w + size_divisibility - 1) / size_divisibility * size_divisibility;
  }
  at::Tensor batch = at::full({static_cast<int64_t>(images.size()), first.size(0), max_h, max_w},
                              pad_value, first.options());
  for (size_t i = 0; i < images.size(); ++i)
    batch[i].narrow(1, 0, sizes[i].first).narrow(2, 0, sizes[i].second).copy_(images[i]);
  return ImageList(batch, sizes);
}

at::Tensor ImageList::operator[](int64_t i) const {
  TORCH_CHECK(i >= 0 && i < size(), "image index ", i, " out of range for ", size(), " images");
  return tensor_[i].narrow(1, 0, image_sizes_[i].first).narrow(2, 0, image_sizes_[i].second);
}

}  // namespace detkit::structures
