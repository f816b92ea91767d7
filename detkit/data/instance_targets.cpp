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

// The annotation's keypoints + 0.5 (load_coco_json), K unlabelled ones when it has none.
std::vector<double> coco_keypoints(const CocoDataset& dataset, AnnotationView a, size_t K) {
  CoordSpan k = a.keypoints();
  if (k.size == 0) return std::vector<double>(3 * K, 0.0);
  if (k.size != 3 * K) {
    throw Error(annotation_place(dataset, a) + ": " + std::to_string(k.size / 3) +
                " keypoints, but the dataset's metadata names " + std::to_string(K) +
                " (keypoint_names; MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS)");
  }
  std::vector<double> out(k.begin(), k.end());
  for (size_t i = 0; i < out.size(); i += 3) out[i] += 0.5, out[i + 1] += 0.5;
  return out;
}

}  // namespace

void transform_keypoints(std::vector<double>& keypoints, const TransformList& transforms, int new_h,
                         int new_w, const std::vector<int64_t>& flip_indices) {
  const size_t K = keypoints.size() / 3;
  std::vector<double> xy(2 * K);
  for (size_t k = 0; k < K; ++k) xy[2 * k] = keypoints[3 * k], xy[2 * k + 1] = keypoints[3 * k + 1];
  for (const auto& t : transforms.transforms()) t->apply_coords(xy.data(), K);
  int flips = 0;
  for (const auto& t : transforms.transforms())
    flips += dynamic_cast<const HFlipTransform*>(t.get()) != nullptr;
  std::vector<double> out(3 * K);
  for (size_t k = 0; k < K; ++k) {
    const size_t from = flips % 2 == 1 ? static_cast<size_t>(flip_indices[k]) : k;
    const double x = xy[2 * from], y = xy[2 * from + 1];
    const bool inside = x >= 0 && y >= 0 && x <= new_w && y <= new_h;
    const double v = inside ? keypoints[3 * from + 2] : 0.0;
    if (v == 0) continue;  // unlabelled: (0, 0, 0), COCO's convention
    out[3 * k] = x, out[3 * k + 1] = y, out[3 * k + 2] = v;
  }
  keypoints = std::move(out);
}

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
                                                 int new_w, MaskFormat mask_format,
                                                 const std::vector<int64_t>* keypoint_flip_indices,
                                                 bool recompute_boxes) {
  std::vector<float> boxes, keypoints;
  std::vector<int64_t> classes;
  std::vector<std::vector<Polygon>> polygons;
  std::vector<at::Tensor> bitmasks;
  for (AnnotationView a : dataset.annotations_of(image_index)) {
    if (a.iscrowd()) continue;
    for (double v : transform_box(a.bbox(), transforms, new_h, new_w)) {
      boxes.push_back(static_cast<float>(v));
    }
    classes.push_back(a.class_index());
    if (keypoint_flip_indices) {
      std::vector<double> k = coco_keypoints(dataset, a, keypoint_flip_indices->size());
      transform_keypoints(k, transforms, new_h, new_w, *keypoint_flip_indices);
      keypoints.insert(keypoints.end(), k.begin(), k.end());  // float32, as Keypoints stores them
    }
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
      instance.emplace_back(xy.begin(), xy.end());
    }
    instance = transforms.apply_polygons(std::move(instance));
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
  if (keypoint_flip_indices) {
    const auto K = static_cast<int64_t>(keypoint_flip_indices->size());
    targets.set("gt_keypoints", at::from_blob(keypoints.data(), {n, K, 3}, at::kFloat).clone());
  }
  if (mask_format == MaskFormat::kPolygon) {
    targets.set("gt_masks", structures::PolygonMasks(std::move(polygons)));
  } else if (mask_format == MaskFormat::kBitmask) {
    at::Tensor stacked = n > 0 ? at::stack(bitmasks) : at::zeros({0, new_h, new_w}, at::kBool);
    targets.set("gt_masks", structures::BitMasks(stacked));
  }
  if (recompute_boxes) {
    if (mask_format == MaskFormat::kNone)
      throw Error("transform_instance_targets: recomputing boxes needs instance masks");
    targets.set("gt_boxes", mask_format == MaskFormat::kPolygon
                                ? targets.polygon_masks("gt_masks").get_bounding_boxes()
                                : targets.bit_masks("gt_masks").get_bounding_boxes());
  }
  // Detectron2's filter_empty_instances: boxes with both sides above 1e-5, masks non-empty.
  at::Tensor keep = targets.boxes("gt_boxes").nonempty(kEmptyBoxThreshold);
  if (mask_format == MaskFormat::kBitmask) {
    keep = keep.logical_and(targets.bit_masks("gt_masks").nonempty());
  } else if (mask_format == MaskFormat::kPolygon) {
    keep = keep.logical_and(targets.polygon_masks("gt_masks").nonempty());
  }
  if (keep.all().item<bool>()) return targets;
  return targets.index(keep);
}

}  // namespace detkit::data
