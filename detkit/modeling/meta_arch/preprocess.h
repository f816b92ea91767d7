#pragma once
// What every meta-architecture does to its inputs first (Detectron2's preprocess_image):
// normalise with the pixel mean and std, batch, pad to the backbone's size divisibility.
#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "detkit/structures/image_list.h"
#include "detkit/structures/model_io.h"

namespace detkit::modeling {

/// (C, 1, 1) float tensors of MODEL.PIXEL_MEAN and MODEL.PIXEL_STD; lengths that differ are a
/// detkit::Error.
std::pair<at::Tensor, at::Tensor> pixel_normalization(const std::vector<double>& mean,
                                                      const std::vector<double>& std);

/// Each input image (C, H, W), as float on pixel_mean's device, minus the mean over the std,
/// batched and zero-padded to the inputs' min_padded_height/width at least, then to a multiple
/// of size_divisibility. `model` names the caller in
/// errors (an empty batch, an image with the wrong channel count).
structures::ImageList normalize_and_pad_images(const std::vector<structures::ModelInput>& batch,
                                               const at::Tensor& pixel_mean,
                                               const at::Tensor& pixel_std,
                                               int64_t size_divisibility, const std::string& model);

}  // namespace detkit::modeling
