#include "detkit/data/transforms/transform.h"

#include <algorithm>
#include <opencv2/imgproc.hpp>
#include <string>

#include "detkit/data/transforms/pil_resize.h"
#include "detkit/data/transforms/polygon_crop.h"
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

std::vector<std::vector<double>> Transform::apply_polygons(
    std::vector<std::vector<double>> polygons) const {
  for (auto& p : polygons) apply_coords(p.data(), p.size() / 2);
  return polygons;
}

CropTransform::CropTransform(int x0, int y0, int w, int h) : x0_(x0), y0_(y0), w_(w), h_(h) {
  if (x0 < 0 || y0 < 0 || w <= 0 || h <= 0) {
    throw Error("CropTransform: the window needs x0, y0 >= 0 and a positive size, got x0 " +
                std::to_string(x0) + ", y0 " + std::to_string(y0) + ", " + std::to_string(w) + "x" +
                std::to_string(h) + " (width x height)");
  }
}

cv::Mat CropTransform::apply_image(const cv::Mat& image) const {
  if (x0_ + w_ > image.cols || y0_ + h_ > image.rows) {
    throw Error("CropTransform: the window x0 " + std::to_string(x0_) + ", y0 " +
                std::to_string(y0_) + ", " + std::to_string(w_) + "x" + std::to_string(h_) +
                " (width x height) is not inside the " + std::to_string(image.cols) + "x" +
                std::to_string(image.rows) + " image");
  }
  return image(cv::Rect(x0_, y0_, w_, h_));
}

void CropTransform::apply_coords(double* xy, size_t num_points) const {
  for (size_t i = 0; i < num_points; ++i) xy[2 * i] -= x0_, xy[2 * i + 1] -= y0_;
}

std::vector<std::vector<double>> CropTransform::apply_polygons(
    std::vector<std::vector<double>> polygons) const {
  std::vector<std::vector<double>> out;
  for (const auto& p : polygons) {
    for (auto& piece : crop_polygon(p, x0_, y0_, x0_ + w_, y0_ + h_)) {
      apply_coords(piece.data(), piece.size() / 2);
      out.push_back(std::move(piece));
    }
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

std::vector<std::vector<double>> TransformList::apply_polygons(
    std::vector<std::vector<double>> polygons) const {
  for (const auto& p : polygons) {
    if (p.size() % 2 != 0) {
      throw Error("TransformList::apply_polygons: odd number of coordinates (" +
                  std::to_string(p.size()) + ")");
    }
  }
  for (const auto& t : transforms_) polygons = t->apply_polygons(std::move(polygons));
  return polygons;
}

cv::Mat TransformList::apply_segmentation(const cv::Mat& mask) const {
  cv::Mat out = mask;
  for (const auto& t : transforms_) out = t->apply_segmentation(out);
  return out;
}

}  // namespace detkit::data
