#pragma once
// The semantic-segmentation target of one training image (Detectron2's DatasetMapper with
// "sem_seg_file_name"): the label map read as PIL's mode "L", taken through the image's
// transforms with nearest-neighbour resampling (Transform::apply_segmentation), as int64.
#include <ATen/core/Tensor.h>

#include <opencv2/core.hpp>
#include <string>

#include "detkit/data/transforms/transform.h"

namespace detkit::data {

/// The label map at `label_path` for the image at `image_path` of (height, width), mapped by
/// `transforms`: an (H', W') int64 tensor in the transformed frame. A map that cannot be read
/// (label_map_io.h) or whose size is not the image's is a detkit::Error naming the file and, for
/// the size, both sizes.
at::Tensor read_semantic_target(const std::string& label_path, const std::string& image_path,
                                int height, int width, const TransformList& transforms);

/// An (H, W) uint8 label map as an (H, W) int64 tensor.
at::Tensor label_map_to_tensor(const cv::Mat& labels);

}  // namespace detkit::data
