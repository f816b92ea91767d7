#include "detkit/data/instance_targets.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <opencv2/core.hpp>
#include <vector>

#include "detkit/structures/mask_ops.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

using structures::Polygon;

// Detectron2's filter_empty_instances threshold on box sides.
constexpr double kEmptyBoxThreshold = 1e-5;

std::string annotation_place(const CocoDataset& dataset, AnnotationView a) {
  return dataset.json_file() + ": annotation id " + std::to_string(a.id()) + " (image id " +
         std::to_string(dataset.image(a.image_index()).id) + ")";
}

// The box in the augmented frame: transformed in float64, clip(min=0), then np.minimum with
// [w, h, w, h].
std::array<double, 4> transform_box(const std::array<double, 4>& xywh,
                                    const TransformList& transforms, int new_h, int new_w) {
  std::array<double, 4> box = transforms.apply_box(coco_bbox_to_xyxy(xywh));
  const double limits[4] = {1.0 * new_w, 1.0 * new_h, 1.0 * new_w, 1.0 * new_h};
  for (int k = 0; k < 4; ++k) box[k] = std::min(std::max(box[k], 0.0), limits[k]);
  return box;
}

at::Tensor rle_to_bitmask(const mask_ops::RLE& rle, const TransformList& transforms, int new_h,
                          int new_w) {
  std::vector<uint8_t> pixels = mask_ops::decode(rle);
  cv::Mat mask(static_cast<int>(rle.h), static_cast<int>(rle.w), CV_8UC1, pixels.data());
  cv::Mat out = transforms.apply_segmentation(mask);
  if (out.rows != new_h || out.cols != new_w) {
    throw Error("RLE mask of " + std::to_string(rle.h) + "x" + std::to_string(rle.w) +
                " does not match the image after transforms");
  }
  if (!out.isContinuous()) out = out.clone();
  return at::from_blob(out.data, {new_h, new_w}, at::kByte).to(at::kBool);
}

// v rounded to float32. The volatile store keeps the rounding: GCC 12.2's SLP vectorizer
// (-O2 and up) turns (double)(float)v back into v when x and y are converted side by side, so
// x0 came out as the file's double (tests/data/test_dataset_mapper.cpp catches it).
float as_float32(double v) {
  volatile float rounded = static_cast<float>(v);
  return rounded;
}

}  // namespace

MaskFormat mask_format_from_config(bool mask_on, const std::string& input_mask_format) {
  if (!mask_on) return MaskFormat::kNone;
  if (input_mask_format == "polygon") return MaskFormat::kPolygon;
  if (input_mask_format == "bitmask") return MaskFormat::kBitmask;
  throw Error("INPUT.MASK_FORMAT must be 'polygon' or 'bitmask', got '" + input_mask_format + "'");
}

std::array<double, 4> coco_bbox_to_xyxy(const std::array<double, 4>& xywh) {
  const float x = as_float32(xywh[0]), y = as_float32(xywh[1]);
  const float w = as_float32(xywh[2]), h = as_float32(xywh[3]);
  const float x1 = x + w, y1 = y + h;  // float32 additions, as in the float32 tensor
  return {x, y, x1, y1};
}

structures::Instances transform_instance_targets(const CocoDataset& dataset, size_t image_index,
                                                 const TransformList& transforms, int new_h,
                                                 int new_w, MaskFormat mask_format) {
  std::vector<float> boxes;
  std::vector<int64_t> classes;
  std::vector<std::vector<Polygon>> polygons;
  std::vector<at::Tensor> bitmasks;
  for (AnnotationView a : dataset.annotations_of(image_index)) {
    if (a.iscrowd()) continue;
    for (double v : transform_box(a.bbox(), transforms, new_h, new_w)) {
      boxes.push_back(static_cast<float>(v));
    }
    classes.push_back(a.class_index());
    if (mask_format == MaskFormat::kNone) continue;
    const SegmentationKind kind = a.segmentation_kind();
    if (kind == SegmentationKind::kNone) {
      throw Error(annotation_place(dataset, a) +
                  ": no segmentation, but MODEL.MASK_ON needs a mask for every instance");
    }
    if (kind == SegmentationKind::kRle) {
      if (mask_format == MaskFormat::kPolygon) {
        throw Error(annotation_place(dataset, a) +
                    ": an RLE segmentation cannot be used with INPUT.MASK_FORMAT 'polygon'; set "
                    "INPUT.MASK_FORMAT bitmask");
      }
      bitmasks.push_back(rle_to_bitmask(a.rle(), transforms, new_h, new_w));
      continue;
    }
    std::vector<Polygon> instance;
    for (size_t k = 0; k < a.num_polygons(); ++k) {
      CoordSpan xy = a.polygon(k);
      instance.push_back(transforms.apply_polygon(Polygon(xy.begin(), xy.end())));
    }
    if (mask_format == MaskFormat::kBitmask) {
      bitmasks.push_back(structures::polygons_to_bitmask(instance, new_h, new_w));
    } else {
      polygons.push_back(std::move(instance));
    }
  }
  const auto n = static_cast<int64_t>(classes.size());
  structures::Instances targets(new_h, new_w);
  targets.set("gt_boxes",
              structures::Boxes(at::from_blob(boxes.data(), {n, 4}, at::kFloat).clone()));
  targets.set("gt_classes", at::from_blob(classes.data(), {n}, at::kLong).clone());
  if (mask_format == MaskFormat::kPolygon) {
    targets.set("gt_masks", structures::PolygonMasks(std::move(polygons)));
  } else if (mask_format == MaskFormat::kBitmask) {
    at::Tensor stacked = n > 0 ? at::stack(bitmasks) : at::zeros({0, new_h, new_w}, at::kBool);
    targets.set("gt_masks", structures::BitMasks(stacked));
  }
  at::Tensor keep = targets.boxes("gt_boxes").nonempty(kEmptyBoxThreshold);
  if (mask_format == MaskFormat::kBitmask) {
    keep = keep.logical_and(targets.bit_masks("gt_masks").nonempty());
  }
  if (keep.all().item<bool>()) return targets;
  return targets.index(keep);
}

}  // namespace detkit::data
