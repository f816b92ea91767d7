#pragma once
// Instances: the objects of one image as named fields of equal length (gt_boxes, gt_classes,
// pred_boxes, scores, pred_masks, ...), plus the image's (height, width).
#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "detkit/structures/boxes.h"
#include "detkit/structures/masks.h"

namespace detkit::structures {

class Instances {
 public:
  using Field = std::variant<at::Tensor, Boxes, PolygonMasks, BitMasks>;

  Instances(int64_t image_height, int64_t image_width);

  int64_t image_height() const { return image_height_; }
  int64_t image_width() const { return image_width_; }

  /// Adds or replaces a field; refuses one whose length differs from the other fields'.
  void set(const std::string& name, Field value);
  bool has(const std::string& name) const { return fields_.count(name) > 0; }
  void remove(const std::string& name);
  const Field& get(const std::string& name) const;

  // Typed reads; an absent field or one of another type is an error naming the field.
  const at::Tensor& tensor(const std::string& name) const;
  const Boxes& boxes(const std::string& name) const;
  const PolygonMasks& polygon_masks(const std::string& name) const;
  const BitMasks& bit_masks(const std::string& name) const;

  /// Number of instances: the common length of the fields (0 when there are none).
  int64_t size() const { return size_; }
  std::vector<std::string> field_names() const;

  /// Every field indexed by an int64 index tensor or a bool mask of length size().
  Instances index(const at::Tensor& indices) const;

  /// Concatenates instances of the same image size and the same field names.
  static Instances cat(const std::vector<Instances>& parts);
  /// Every tensor, Boxes and BitMasks field on `device` (Detectron2's Instances.to); polygons
  /// stay on the host, where they are rasterised.
  Instances to(const c10::Device& device) const;

 private:
  int64_t image_height_, image_width_;
  int64_t size_ = 0;
  std::map<std::string, Field> fields_;
};

/// Length of one field value (rows of a tensor, number of boxes or masks).
int64_t field_length(const Instances::Field& field);

}  // namespace detkit::structures
