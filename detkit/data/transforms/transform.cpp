#include "detkit/data/transforms/transform.h"

#include <algorithm>
#include <opencv2/imgproc.hpp>
#include <string>

#include "detkit/data/transforms/pil_resize.h"
#include "detkit/utils/error.h"

namespace detkit::data {

std::array<double, 4> Transform::apply_box(const std::array<double, 4>& xyxy) const {
  // Corners (x0, y0), (x1, y0), (x0, y1), (x1, y1), as Detectron2 orders them.
  double corners[8] = {xyxy[0], xyxy[1], xyxy[2], xyxy[1], xyxy[0], xyxy[3], xyxy[2], xyxy[3]};
  apply_coords(corners, 4);
  std::array<double, 4> out = {corners[0], corners[1], corners[0], corners[1]};
  for (int k = 1; k < 4; ++k) {
    out[0] = std::min(out[0], corners[2 * k]);
    out[1] = std::min(out[1], corners[2 * k + 1]);
    out[2] = std::max(out[2], corners[2 * k]);
    out[3] = std::max(out[3], corners[2 * k + 1]);
  }
  return out;
}

ResizeTransform::ResizeTransform(int h, int w, int new_h, int new_w)
    : h_(h), w_(w), new_h_(new_h), new_w_(new_w) {
  if (h <= 0 || w <= 0 || new_h <= 0 || new_w <= 0) {
    throw Error("ResizeTransform: sizes must be positive, got (" + std::to_string(h) + ", " +
                std::to_string(w) + ") -> (" + std::to_string(new_h) + ", " +
                std::to_string(new_w) + ")");
  }
}

cv::Mat ResizeTransform::apply_image(const cv::Mat& image) const {
  if (image.rows != h_ || image.cols != w_) {
    throw Error("ResizeTransform: expected a " + std::to_string(h_) + "x" + std::to_string(w_) +
                " image, got " + std::to_string(image.rows) + "x" + std::to_string(image.cols));
  }
  if (new_h_ == h_ && new_w_ == w_) return image;
  return pil_bilinear_resize(image, new_h_, new_w_);
}

void ResizeTransform::apply_coords(double* xy, size_t num_points) const {
  // The ratio first, then the product: Detectron2's coords * (new_w * 1.0 / w).
  const double scale_x = new_w_ * 1.0 / w_, scale_y = new_h_ * 1.0 / h_;
  for (size_t i = 0; i < num_points; ++i) {
    xy[2 * i] *= scale_x;
    xy[2 * i + 1] *= scale_y;
  }
}

cv::Mat ResizeTransform::apply_segmentation(const cv::Mat& mask) const {
  if (mask.rows != h_ || mask.cols != w_) {
    throw Error("ResizeTransform: expected a " + std::to_string(h_) + "x" + std::to_string(w_) +
                " mask, got " + std::to_string(mask.rows) + "x" + std::to_string(mask.cols));
  }
  if (new_h_ == h_ && new_w_ == w_) return mask;
  // PIL's NEAREST, as Detectron2 resizes masks and label maps (OpenCV's nearest modes pick other
  // source pixels at some sizes).
  return pil_nearest_resize(mask, new_h_, new_w_);
}

cv::Mat HFlipTransform::apply_image(const cv::Mat& image) const {
  cv::Mat out;
  cv::flip(image, out, 1);
  return out;
}

void HFlipTransform::apply_coords(double* xy, size_t num_points) const {
  for (size_t i = 0; i < num_points; ++i) xy[2 * i] = width_ - xy[2 * i];
}

cv::Mat VFlipTransform::apply_image(const cv::Mat& image) const {
  cv::Mat out;
  cv::flip(image, out, 0);
  return out;
}

void VFlipTransform::apply_coords(double* xy, size_t num_points) const {
  for (size_t i = 0; i < num_points; ++i) xy[2 * i + 1] = height_ - xy[2 * i + 1];
}

void TransformList::push_back(std::shared_ptr<const Transform> transform) {
  if (!transform) throw Error("TransformList: null transform");
  transforms_.push_back(std::move(transform));
}

cv::Mat TransformList::apply_image(const cv::Mat& image) const {
  cv::Mat out = image;
  for (const auto& t : transforms_) out = t->apply_image(out);
  return out;
}

std::array<double, 4> TransformList::apply_box(std::array<double, 4> xyxy) const {
  for (const auto& t : transforms_) xyxy = t->apply_box(xyxy);
  return xyxy;
}

std::vector<double> TransformList::apply_polygon(std::vector<double> xy) const {
  if (xy.size() % 2 != 0) {
    throw Error("TransformList::apply_polygon: odd number of coordinates (" +
                std::to_string(xy.size()) + ")");
  }
  for (const auto& t : transforms_) t->apply_coords(xy.data(), xy.size() / 2);
  return xy;
}

cv::Mat TransformList::apply_segmentation(const cv::Mat& mask) const {
  cv::Mat out = mask;
  for (const auto& t : transforms_) out = t->apply_segmentation(out);
  return out;
}

}  // namespace detkit::data
