// Instance targets after a crop, as Detectron2's DatasetMapper makes them with INPUT.CROP: boxes
// cut with the image, polygons cut into their pieces, and with masks the boxes recomputed from
// the cut masks (DatasetMapper's own example: a triangle cut across its box), instances left
// outside the window dropped.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "detkit/config/defaults.h"
#include "detkit/data/coco/coco.h"
#include "detkit/data/dataset_mapper.h"
#include "detkit/data/instance_targets.h"
#include "detkit/data/transforms/transform.h"
#include "tests/data/coco_test_files.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

// A 10x10 image: a triangle (0,0), (8,0), (0,8); a U whose arms the window cuts apart; a square
// the window leaves out.
CocoDataset crop_dataset(testing::TempDir& dir) {
  const std::string annotations =
      testing::coco_annotation(1, 1, 1, R"(, "segmentation": [[0, 0, 8, 0, 0, 8]])",
                               "[0, 0, 8, 8]") +
      ", " +
      testing::coco_annotation(
          2, 1, 1,
          R"(, "segmentation": [[4, 5, 5, 5, 5, 8.5, 7, 8.5, 7, 5, 8, 5, 8, 9.5, 4, 9.5]])",
          "[4, 5, 4, 4.5]") +
      ", " +
      testing::coco_annotation(3, 1, 1, R"(, "segmentation": [[0, 8, 2, 8, 2, 10, 0, 10]])",
                               "[0, 8, 2, 2]");
  const std::string file =
      dir.write("crop.json", testing::coco_json(testing::coco_image(1, "a.jpg", 10, 10),
                                                annotations, R"({"id": 1, "name": "thing"})"));
  return load_coco_json(file, "");
}

std::vector<float> boxes_of(const structures::Instances& t) {
  at::Tensor b = t.boxes("gt_boxes").tensor().contiguous();
  return std::vector<float>(b.data_ptr<float>(), b.data_ptr<float>() + b.numel());
}

TEST(CropTargets, MasksRecomputeTheBoxesOfCutObjects) {
  testing::TempDir dir("crop_targets");
  const CocoDataset ds = crop_dataset(dir);
  TransformList crop;
  crop.push_back(std::make_shared<CropTransform>(4, 0, 4, 8));  // x in [4, 8], y in [0, 8]
  // Boxes only: each box cut by the window (the square at y >= 8 is left with no height).
  const auto plain = transform_instance_targets(ds, 0, crop, 8, 4, MaskFormat::kNone);
  EXPECT_EQ(boxes_of(plain), (std::vector<float>{0, 0, 4, 8, 0, 5, 4, 8}));
  // Polygons: the triangle is (4,0), (8,0), (4,4) moved to the window, box (0, 0, 4, 4); the U's
  // arms below y = 8 are two pieces; the square is dropped.
  const auto polygons = transform_instance_targets(ds, 0, crop, 8, 4, MaskFormat::kPolygon, nullptr,
                                                   /*recompute_boxes=*/true);
  EXPECT_EQ(boxes_of(polygons), (std::vector<float>{0, 0, 4, 4, 0, 5, 4, 8}));
  const auto& masks = polygons.polygon_masks("gt_masks");
  ASSERT_EQ(masks.size(), 2);
  EXPECT_EQ(masks.polygons()[0].size(), 1u);
  EXPECT_EQ(masks.polygons()[1].size(), 2u);
  // Bitmasks: the boxes of the set pixels.
  const auto bits = transform_instance_targets(ds, 0, crop, 8, 4, MaskFormat::kBitmask, nullptr,
                                               /*recompute_boxes=*/true);
  ASSERT_EQ(bits.bit_masks("gt_masks").size(), 2);
  const auto b = boxes_of(bits);
  EXPECT_EQ(b[0], 0);
  EXPECT_LE(b[2], 4);
  EXPECT_LE(b[3], 5);  // the cut triangle's pixels, not the cut box's 8 rows
}

TEST(CropTargets, TheMapperRecomputesBoxesOnlyForTrainingWithMasksAndACrop) {
  config::CfgNode cfg = config::get_cfg();
  EXPECT_FALSE(dataset_mapper_options_from_config(cfg, true).recompute_boxes);
  cfg.merge_from_list({"INPUT.CROP.ENABLED", "True"});
  EXPECT_FALSE(dataset_mapper_options_from_config(cfg, true).recompute_boxes);  // no masks
  cfg.merge_from_list({"MODEL.MASK_ON", "True"});
  EXPECT_TRUE(dataset_mapper_options_from_config(cfg, true).recompute_boxes);
  EXPECT_FALSE(dataset_mapper_options_from_config(cfg, false).recompute_boxes);
}

}  // namespace
}  // namespace detkit::data
