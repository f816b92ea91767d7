#pragma once
// DatasetMapper: one COCO image record -> what the model takes (Detectron2's DatasetMapper).
//
//   read the image (OpenCV, EXIF orientation applied, INPUT.FORMAT channel order);
//   check its size equals the JSON's;
//   draw the augmentations from the sample's SampleRng and apply them to the image;
//   training: targets in the augmented frame (instance_targets.h): crowd dropped, boxes
//   clipped, empty instances removed, gt_masks when MODEL.MASK_ON, gt_keypoints when
//   MODEL.KEYPOINT_ON (flipped with the training datasets' keypoint flip map); and when the
//   dataset gives the image a semantic label map (sem_seg_path), sem_seg through the same
//   transforms (semantic_target.h);
//   testing: the resized image only.
// ModelInput.height/width stay the original size, for rescaling predictions.
//
// Errors name the file and the image id: a missing file, an unreadable or truncated image, a
// decoded size that differs from the JSON's; the same for a label map, whose size must be the
// image's.
#include <string>

#include "detkit/config/cfg_node.h"
#include "detkit/data/bad_images.h"
#include "detkit/data/coco/coco_dataset.h"
#include "detkit/data/instance_targets.h"
#include "detkit/data/precomputed_proposals.h"
#include "detkit/data/transforms/augmentation.h"
#include "detkit/structures/model_io.h"

namespace detkit::data {

struct DatasetMapperOptions {
  bool is_train = true;
  AugmentationList augmentations;
  std::string image_format = "BGR";  // INPUT.FORMAT: "BGR" or "RGB"
  MaskFormat mask_format = MaskFormat::kNone;
  /// MODEL.KEYPOINT_ON: per keypoint, the one it becomes under a horizontal flip; empty: no
  /// keypoint targets.
  std::vector<int64_t> keypoint_hflip_indices;
  /// MODEL.LOAD_PROPOSALS: each image's precomputed proposals, the best `proposal_topk` of them
  /// (DATASETS.PRECOMPUTED_PROPOSAL_TOPK_TRAIN / _TEST) kept after the transforms; else nullptr.
  std::shared_ptr<const ProposalTable> proposals;
  int64_t proposal_topk = 0;
  /// Training with INPUT.CROP.ENABLED and MODEL.MASK_ON: gt_boxes from the cut masks.
  bool recompute_boxes = false;
};

/// Detectron2's DatasetMapper.from_config: build_augmentation(cfg, is_train), INPUT.FORMAT,
/// MODEL.MASK_ON and INPUT.MASK_FORMAT, and for training with MODEL.KEYPOINT_ON the flip indices of
/// the first of DATASETS.TRAIN's metadata (create_keypoint_hflip_indices; every training dataset
/// must name the same keypoints, MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS of them).
DatasetMapperOptions dataset_mapper_options_from_config(const config::CfgNode& cfg, bool is_train);

/// The keypoint flip indices for MODEL.KEYPOINT_ON, as above; errors name the dataset and key.
std::vector<int64_t> keypoint_hflip_indices(const config::CfgNode& cfg);

class DatasetMapper {
 public:
  explicit DatasetMapper(DatasetMapperOptions options);

  /// Maps image `image_index` of `dataset`; every random draw comes from `rng`. Thread-safe. An
  /// image file that is missing, unreadable or of another size than the file says is a BadImage.
  structures::ModelInput operator()(const CocoDataset& dataset, size_t image_index,
                                    SampleRng& rng) const;

  const DatasetMapperOptions& options() const { return options_; }

 private:
  DatasetMapperOptions options_;
};

/// An (H, W, 3) uint8 image as a (3, H, W) float tensor of 0..255 (another depth: a c10::Error).
at::Tensor image_to_tensor(const cv::Mat& image);

}  // namespace detkit::data
