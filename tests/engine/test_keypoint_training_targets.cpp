// The Keypoint R-CNN fixture's training targets (../shared/fixtures/detectron2_keypoint) through
// detkit's own loader and train mapper.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/data/coco/coco.h"
#include "detkit/data/dataset_mapper.h"
#include "tests/modeling/meta_arch/parity_checks.h"
#include "tests/support/detectron2_fixture.h"

namespace detkit {
namespace {

// detkit's loader and train mapper, from the fixture's keypoint JSON and coco_tiny's images, make
// the training targets Detectron2 trained on.
TEST(KeypointPipeline, MappedTrainingTargetsAreDetectron2s) {
  testing::Detectron2Fixture fx;
  fx.dir = std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_keypoint/";
  if (!fx.present()) GTEST_SKIP() << "fixture absent: " << fx.dir;
  const nlohmann::json meta = nlohmann::json::parse(std::ifstream(fx.dir + "outputs.json"));
  const data::CocoDataset dataset =
      data::load_coco_json(fx.dir + meta["keypoints_json"].get<std::string>(),
                           std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/val2017");
  data::DatasetMapperOptions options;
  options.augmentations = {
      std::make_shared<data::ResizeShortestEdge>(std::vector<int64_t>{320}, 480)};
  options.keypoint_hflip_indices = meta["keypoint_hflip_indices"].get<std::vector<int64_t>>();
  const data::DatasetMapper mapper(options);
  for (int i = 0; i < 2; ++i) {
    const std::string s = std::to_string(i);
    const auto index = dataset.find_image(meta["images"][i]["image_id"].get<int64_t>());
    ASSERT_TRUE(index.has_value());
    data::SampleRng rng(0, 0);
    const structures::ModelInput input = mapper(dataset, *index, rng);
    const structures::Instances& t = *input.instances;
    const double db =
        testing::max_abs_diff(t.boxes("gt_boxes").tensor(), fx.outputs().at("train_gt_boxes_" + s));
    const double dk =
        testing::max_abs_diff(t.tensor("gt_keypoints"), fx.outputs().at("train_gt_keypoints_" + s));
    std::cout << "[ detectron2 parity ] keypoint targets image " << i << ": " << t.size()
              << " persons, max abs diff boxes " << db << " px, keypoints " << dk << " px\n";
    EXPECT_TRUE(t.tensor("gt_classes").equal(fx.outputs().at("train_gt_classes_" + s)));
    EXPECT_EQ(db, 0.0);
    EXPECT_EQ(dk, 0.0);
  }
}

}  // namespace
}  // namespace detkit
