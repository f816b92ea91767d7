#include "detkit/modeling/meta_arch/preprocess.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "detkit/utils/error.h"

namespace detkit::modeling {

std::pair<at::Tensor, at::Tensor> pixel_normalization(const std::vector<double>& mean,
                                                      const std::vector<double>& std) {
  if (mean.size() != std.size())
    throw Error("MODEL.PIXEL_MEAN and MODEL.PIXEL_STD must have the same length");
  return {at::tensor(mean, at::kFloat).reshape({-1, 1, 1}),
          at::tensor(std, at::kFloat).reshape({-1, 1, 1})};
}

structures::ImageList normalize_and_pad_images(const std::vector<structures::ModelInput>& batch,
                                               const at::Tensor& pixel_mean,
                                               const at::Tensor& pixel_std,
                                               int64_t size_divisibility,
                                               const std::string& model) {
  if (batch.empty()) throw Error(model + ": empty batch");
  std::vector<at::Tensor> images;
  std::pair<int64_t, int64_t> min_size{0, 0};
  for (const auto& input : batch) {
    min_size.first = std::max(min_size.first, input.min_padded_height);
    min_size.second = std::max(min_size.second, input.min_padded_width);
    TORCH_CHECK(input.image.dim() == 3 && input.image.size(0) == pixel_mean.size(0),
                "model input must be (", pixel_mean.size(0), ", H, W), got ", input.image.sizes());
    // To the model's device as stored (uint8: a quarter of float's bytes), without blocking the
    // host where the loader pinned it, then to float there.
    const bool pinned = pixel_mean.is_cuda() && input.image.is_pinned();
    const at::Tensor image = input.image.to(pixel_mean.device(), /*non_blocking=*/pinned);
    images.push_back((image.to(at::kFloat) - pixel_mean) / pixel_std);
  }
  return structures::ImageList::from_tensors(images, size_divisibility, 0.0, min_size);
}

}  // namespace detkit::modeling
