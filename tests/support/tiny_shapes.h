#pragma once
// A Mask R-CNN small enough to train a few iterations in seconds, and the dataset it trains on.
#include <string>

#include "detkit/config/defaults.h"
#include "detkit/data/catalog.h"
#include "detkit/data/shapes/shapes.h"
#include "tests/support/temp_dir.h"

namespace detkit::testing {

inline const char* kTinyConfig = R"(_BASE_: "@BASE@"
MODEL:
  DEVICE: "cpu"
  MASK_ON: True
  RESNETS: {DEPTH: 18, RES2_OUT_CHANNELS: 64, STEM_OUT_CHANNELS: 32, NORM: "GN",
            STRIDE_IN_1X1: False, WIDTH_PER_GROUP: 16}
  BACKBONE: {FREEZE_AT: 0}
  FPN: {OUT_CHANNELS: 32}
  ANCHOR_GENERATOR: {SIZES: [[8], [16], [32], [64], [128]]}
  RPN: {PRE_NMS_TOPK_TRAIN: 200, POST_NMS_TOPK_TRAIN: 100, PRE_NMS_TOPK_TEST: 100, POST_NMS_TOPK_TEST: 50}
  ROI_HEADS: {NUM_CLASSES: 3, BATCH_SIZE_PER_IMAGE: 32}
  ROI_BOX_HEAD: {FC_DIM: 64}
  ROI_MASK_HEAD: {CONV_DIM: 32, NUM_CONV: 1}
DATASETS:
  TRAIN: ("shapes_train",)
  TEST: ()
DATALOADER: {NUM_WORKERS: 1}
INPUT: {MIN_SIZE_TRAIN: [64], MAX_SIZE_TRAIN: 96, MIN_SIZE_TEST: 64, MAX_SIZE_TEST: 96}
SOLVER: {IMS_PER_BATCH: 2, BASE_LR: 0.01, WARMUP_ITERS: 2, STEPS: [4], MAX_ITER: 6,
         CHECKPOINT_PERIOD: 3}
SEED: 7
)";

/// A temp folder with an 8-image 64x64 shapes dataset (datasets/shapes: shapes_train, shapes_val
/// with DETKIT_DATASETS=dir.path("datasets")) and tiny.yaml, the config above.
struct TinySetup {
  TempDir dir;
  std::string config;
  explicit TinySetup(const std::string& name = "tiny") : dir(name) {
    data::ShapesOptions shapes;
    shapes.out_dir = dir.path("datasets/shapes");
    shapes.num_train = 8;
    shapes.num_val = 2;
    shapes.width = shapes.height = 64;
    shapes.seed = 3;
    data::make_shapes(shapes);
    std::string text = kTinyConfig;
    text.replace(text.find("@BASE@"), 6,
                 std::string(DETKIT_SOURCE_DIR) + "/configs/Base-RCNN-FPN.yaml");
    config = dir.write("tiny.yaml", text);
  }
};

/// tiny.yaml with its datasets registered as <prefix>_train / <prefix>_val (no DETKIT_DATASETS
/// needed) and OUTPUT_DIR in the temp folder.
inline config::CfgNode tiny_config(const TinySetup& s, const std::string& prefix) {
  const std::string root = s.dir.path("datasets/shapes");
  data::register_coco_instances(prefix + "_train", root + "/annotations/instances_train.json",
                                root + "/train");
  data::register_coco_instances(prefix + "_val", root + "/annotations/instances_val.json",
                                root + "/val");
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(s.config);
  cfg.merge_from_list({"DATASETS.TRAIN", "('" + prefix + "_train',)", "DATASETS.TEST",
                       "('" + prefix + "_val',)", "OUTPUT_DIR", s.dir.path("out")});
  return cfg;
}

}  // namespace detkit::testing
