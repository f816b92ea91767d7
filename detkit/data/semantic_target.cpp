#include "detkit/data/semantic_target.h"

#include <ATen/ATen.h>

#include "detkit/data/image/label_map_io.h"
#include "detkit/utils/error.h"

namespace detkit::data {

at::Tensor label_map_to_tensor(const cv::Mat& labels) {
  TORCH_CHECK(labels.type() == CV_8UC1, "label_map_to_tensor needs an (H, W) uint8 map, got type ",
              labels.type());
  const cv::Mat contiguous = labels.isContinuous() ? labels : labels.clone();
  // from_blob borrows the matrix's pixels; the int64 copy owns its own.
  return at::from_blob(contiguous.data, {contiguous.rows, contiguous.cols}, at::kByte)
      .to(at::kLong);
}

at::Tensor read_semantic_target(const std::string& label_path, const std::string& image_path,
                                int height, int width, const TransformList& transforms) {
  const cv::Mat labels = read_label_map(label_path);
  // Detectron2 finds this out only when a resize asserts on the shape (and never without one).
  if (labels.rows != height || labels.cols != width) {
    throw Error(label_path + ": the semantic label map is " + std::to_string(labels.cols) + "x" +
                std::to_string(labels.rows) + " (width x height) but its image " + image_path +
                " is " + std::to_string(width) + "x" + std::to_string(height));
  }
  return label_map_to_tensor(transforms.apply_segmentation(labels));
}

}  // namespace detkit::data
