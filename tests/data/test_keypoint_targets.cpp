// Keypoint targets as Detectron2's transform_keypoint_annotations makes them: mapped with the
// image, points pushed outside the image made unlabelled, left and right swapped by a horizontal
// flip, unlabelled points (0, 0, 0).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>

#include "detkit/config/defaults.h"
#include "detkit/data/coco/coco.h"
#include "detkit/data/dataset_mapper.h"
#include "detkit/data/instance_targets.h"
#include "detkit/data/transforms/transform.h"
#include "detkit/utils/error.h"
#include "tests/data/coco_test_files.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

// Three keypoints: 0 unpaired, 1 and 2 a left/right pair.
const std::vector<int64_t> kFlip = {0, 2, 1};

TEST(KeypointTargets, HorizontalFlipMirrorsAndSwapsPairs) {
  TransformList flip;
  flip.push_back(std::make_shared<HFlipTransform>(10));
  std::vector<double> k = {1.5, 2.5, 2, 3.5, 4.5, 1, 8.5, 6.5, 2};
  transform_keypoints(k, flip, 20, 10, kFlip);
  // Keypoint 1 is the flipped keypoint 2 and vice versa; x -> 10 - x.
  EXPECT_EQ(k, (std::vector<double>{8.5, 2.5, 2, 1.5, 6.5, 2, 6.5, 4.5, 1}));
}

TEST(KeypointTargets, TwoFlipsDoNotSwapAndOutsidePointsBecomeUnlabelled) {
  TransformList two;
  two.push_back(std::make_shared<HFlipTransform>(10));
  two.push_back(std::make_shared<HFlipTransform>(10));
  std::vector<double> k = {1.5, 2.5, 2, 3.5, 30.5, 1, 0, 0, 0};  // keypoint 1 below the image
  transform_keypoints(k, two, 20, 10, kFlip);
  EXPECT_EQ(k, (std::vector<double>{1.5, 2.5, 2, 0, 0, 0, 0, 0, 0}));
  // A point on the image's right edge is inside, as Detectron2's <= says.
  std::vector<double> edge = {10, 20, 2, 0, 0, 0, 0, 0, 0};
  transform_keypoints(edge, TransformList(), 20, 10, kFlip);
  EXPECT_EQ(edge[2], 2);
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one with: " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(KeypointTargets, FlipIndicesComeFromTheTrainingDatasetsMetadata) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list(
      {"MODEL.KEYPOINT_ON", "True", "DATASETS.TRAIN", "('keypoints_coco_2017_train',)"});
  const auto flip = keypoint_hflip_indices(cfg);
  ASSERT_EQ(flip.size(), 17u);
  EXPECT_EQ(flip[1], 2);  // left_eye <-> right_eye
  EXPECT_EQ(flip[0], 0);  // nose
  config::CfgNode five = cfg;
  five.merge_from_list({"MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS", "5"});
  expect_error([&] { keypoint_hflip_indices(five); },
               "MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS is 5 but the metadata of "
               "'keypoints_coco_2017_train' names 17 keypoints");
  config::CfgNode things = cfg;
  things.merge_from_list({"DATASETS.TRAIN", "('coco_2017_train',)"});
  expect_error([&] { keypoint_hflip_indices(things); },
               "the metadata of 'coco_2017_train' has no keypoint_names");
  // The test mapper needs no keypoint metadata.
  EXPECT_TRUE(dataset_mapper_options_from_config(things, false).keypoint_hflip_indices.empty());
}

TEST(KeypointTargets, AnnotationWithAnotherKeypointCountIsNamed) {
  testing::TempDir dir("keypoint_targets");
  const std::string file = dir.write(
      "k.json",
      testing::coco_json(testing::coco_image(1, "a.jpg"),
                         testing::coco_annotation(7, 1, 1, R"(, "keypoints": [1, 1, 2, 2, 2, 2])"),
                         R"({"id": 1, "name": "person"})"));
  const CocoDataset ds = load_coco_json(file, "");
  expect_error(
      [&] { transform_instance_targets(ds, 0, TransformList(), 4, 6, MaskFormat::kNone, &kFlip); },
      "annotation id 7 (image id 1): 2 keypoints, but the dataset's metadata names 3");
  // Without keypoints: three unlabelled ones.
  const std::string none = dir.write(
      "n.json", testing::coco_json(testing::coco_image(1, "a.jpg"),
                                   testing::coco_annotation(7, 1, 1), R"({"id": 1, "name": "p"})"));
  const auto t = transform_instance_targets(load_coco_json(none, ""), 0, TransformList(), 4, 6,
                                            MaskFormat::kNone, &kFlip);
  EXPECT_TRUE(t.tensor("gt_keypoints").equal(at::zeros({1, 3, 3})));
}

}  // namespace
}  // namespace detkit::data
