// Keypoint targets as Detectron2's transform_keypoint_annotations makes them: mapped with the
// image, points pushed outside the image made unlabelled, left and right swapped by a horizontal
// flip, unlabelled points (0, 0, 0).
#include <gtest/gtest.h>

#include "detkit/data/instance_targets.h"
#include "detkit/data/transforms/transform.h"

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

}  // namespace
}  // namespace detkit::data
