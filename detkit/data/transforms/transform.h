#pragma once
// Deterministic geometric transforms (Detectron2's fvcore Transform): each maps an image, point
// coordinates, boxes and masks the same way. Augmentations (augmentation.h) draw them at random.
//
// Coordinates are doubles, as Detectron2 transforms them in float64 numpy arrays.
#include <array>
#include <memory>
#include <opencv2/core.hpp>
#include <vector>

namespace detkit::data {

class Transform {
 public:
  virtual ~Transform() = default;
  /// An (H, W) or (H, W, C) uint8 image.
  virtual cv::Mat apply_image(const cv::Mat& image) const = 0;
  /// Maps points in place: `xy` holds x0, y0, x1, y1, ... (2 * num_points doubles).
  virtual void apply_coords(double* xy, size_t num_points) const = 0;
  /// An (H, W) uint8 mask (nearest-neighbour where pixels are resampled).
  virtual cv::Mat apply_segmentation(const cv::Mat& mask) const = 0;
  /// An XYXY box: its 4 corners mapped, then their min and max (Detectron2's apply_box).
  std::array<double, 4> apply_box(const std::array<double, 4>& xyxy) const;
  /// Polygons (x0, y0, x1, y1, ...): each one's points mapped; a crop cuts them first, so one
  /// polygon may give none or several.
  virtual std::vector<std::vector<double>> apply_polygons(
      std::vector<std::vector<double>> polygons) const;
};

/// Leaves everything as it is (a resize to short side 0, a flip not drawn).
class NoOpTransform : public Transform {
 public:
  cv::Mat apply_image(const cv::Mat& image) const override { return image; }
  void apply_coords(double*, size_t) const override {}
  cv::Mat apply_segmentation(const cv::Mat& mask) const override { return mask; }
};

/// Resizes (h, w) to (new_h, new_w): images bilinear exactly as PIL (Detectron2's resize;
/// pil_resize.h), masks nearest, x scaled by new_w / w and y by new_h / h.
class ResizeTransform : public Transform {
 public:
  ResizeTransform(int h, int w, int new_h, int new_w);
  cv::Mat apply_image(const cv::Mat& image) const override;
  void apply_coords(double* xy, size_t num_points) const override;
  cv::Mat apply_segmentation(const cv::Mat& mask) const override;
  int new_height() const { return new_h_; }
  int new_width() const { return new_w_; }

 private:
  int h_, w_, new_h_, new_w_;
};

/// Mirrors an image of this width left-right: x -> width - x.
class HFlipTransform : public Transform {
 public:
  explicit HFlipTransform(int width) : width_(width) {}
  cv::Mat apply_image(const cv::Mat& image) const override;
  void apply_coords(double* xy, size_t num_points) const override;
  cv::Mat apply_segmentation(const cv::Mat& mask) const override { return apply_image(mask); }

 private:
  int width_;
};

/// Mirrors an image of this height top-bottom: y -> height - y.
class VFlipTransform : public Transform {
 public:
  explicit VFlipTransform(int height) : height_(height) {}
  cv::Mat apply_image(const cv::Mat& image) const override;
  void apply_coords(double* xy, size_t num_points) const override;
  cv::Mat apply_segmentation(const cv::Mat& mask) const override { return apply_image(mask); }

 private:
  int height_;
};

/// Cuts the window x in [x0, x0 + w), y in [y0, y0 + h) out of an image of at least that size
/// (Detectron2's CropTransform): points move by (-x0, -y0); polygons are cut to the window
/// first (polygon_crop.h), as Detectron2 cuts them with shapely.
class CropTransform : public Transform {
 public:
  CropTransform(int x0, int y0, int w, int h);
  cv::Mat apply_image(const cv::Mat& image) const override;
  void apply_coords(double* xy, size_t num_points) const override;
  cv::Mat apply_segmentation(const cv::Mat& mask) const override { return apply_image(mask); }
  std::vector<std::vector<double>> apply_polygons(
      std::vector<std::vector<double>> polygons) const override;
  int new_height() const { return h_; }
  int new_width() const { return w_; }

 private:
  int x0_, y0_, w_, h_;
};

/// Transforms applied in order; boxes go through each transform's apply_box in turn, as in
/// Detectron2's TransformList.
class TransformList {
 public:
  TransformList() = default;
  void push_back(std::shared_ptr<const Transform> transform);
  const std::vector<std::shared_ptr<const Transform>>& transforms() const { return transforms_; }

  cv::Mat apply_image(const cv::Mat& image) const;
  std::array<double, 4> apply_box(std::array<double, 4> xyxy) const;
  /// One instance's polygons (x0, y0, x1, y1, ...) through each transform's apply_polygons: the
  /// mapped polygons, fewer or more of them after a crop.
  std::vector<std::vector<double>> apply_polygons(std::vector<std::vector<double>> polygons) const;
  cv::Mat apply_segmentation(const cv::Mat& mask) const;

 private:
  std::vector<std::shared_ptr<const Transform>> transforms_;
};

}  // namespace detkit::data
