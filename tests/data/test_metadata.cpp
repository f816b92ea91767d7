// The metadata catalog: built-in names come filled (COCO's things checked against the real COCO
// 2017 file, person keypoints and their flip map against Detectron2's own metadata in the
// keypoint fixture), loading a dataset records its things, and a conflict names the dataset.
#include "detkit/data/metadata.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/data/catalog.h"
#include "detkit/data/coco/coco.h"
#include "detkit/utils/error.h"
#include "tests/data/coco_test_files.h"
#include "tests/data/mapper_test_files.h"

namespace detkit::data {
namespace {

TEST(Metadata, BuiltinCocoThingsAreTheCocoFilesCategories) {
  DETKIT_SKIP_WITHOUT_COCO_TINY();
  const Metadata& m = global_metadata().get("coco_2017_val");
  EXPECT_EQ(m.evaluator_type, "coco");
  EXPECT_NE(m.json_file.find("instances_val2017.json"), std::string::npos) << m.json_file;
  ASSERT_EQ(m.thing_classes.size(), 80u);
  EXPECT_EQ(m.thing_classes[3], "motorcycle");
  EXPECT_EQ(m.dataset_id(3), 4);
  EXPECT_EQ(m.contiguous_id(90), 79);
  const CocoDataset coco = load_coco_json(testing::coco_tiny_json("val2017"),
                                          testing::coco_tiny_images("val2017"));
  EXPECT_EQ(m.thing_classes, coco.class_names());
  for (int k = 0; k < 80; ++k) EXPECT_EQ(m.dataset_id(k), coco.category_id_of(k)) << k;
  // Recording the same things again is accepted (what loading coco_2017_val does).
  EXPECT_NO_THROW(record_things("coco_2017_val", coco));
  EXPECT_THROW(m.contiguous_id(12), Error);  // COCO has no category 12
  EXPECT_THROW(m.dataset_id(80), Error);
}

TEST(Metadata, PersonKeypointsAreDetectron2s) {
  const std::string outputs =
      std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_keypoint/outputs.json";
  if (!std::filesystem::exists(outputs))
    GTEST_SKIP() << "Detectron2's keypoint fixture is absent: expected " << outputs;
  std::ifstream in(outputs);
  const nlohmann::json d2 = nlohmann::json::parse(in);
  const Metadata& m = global_metadata().get("keypoints_coco_2017_val");
  EXPECT_EQ(m.thing_classes, std::vector<std::string>{"person"});
  EXPECT_EQ(m.dataset_id(0), 1);
  EXPECT_EQ(m.keypoint_names, d2["keypoint_names"].get<std::vector<std::string>>());
  std::vector<std::pair<std::string, std::string>> flip_map;
  for (const auto& pair : d2["keypoint_flip_map"]) flip_map.emplace_back(pair[0], pair[1]);
  EXPECT_EQ(m.keypoint_flip_map, flip_map);
  EXPECT_EQ(m.keypoint_flip_indices(), d2["keypoint_hflip_indices"].get<std::vector<int64_t>>());
}

TEST(Metadata, ShapesThingsAreTheGeneratorsCategories) {
  const Metadata& m = global_metadata().get("shapes_val");
  EXPECT_EQ(m.thing_classes, (std::vector<std::string>{"circle", "triangle", "rectangle"}));
  EXPECT_EQ(m.thing_dataset_ids, (std::vector<int64_t>{1, 2, 3}));
}

TEST(Metadata, ARegisteredDatasetGetsItsFilesThenItsThingsWhenLoaded) {
  testing::TempDir dir("metadata_registered");
  testing::write_image(dir, "a.png", testing::gradient_image(8, 8, 1));
  const CocoDataset written = testing::write_and_load(
      dir, testing::coco_image(1, "a.png", 8, 8),
      testing::coco_annotation(1, 1, 3, "", "[1, 1, 4, 4]"));
  register_coco_instances("metadata_registered", dir.path("ann.json"), dir.path("images"));
  Metadata& m = global_metadata().get("metadata_registered");
  EXPECT_EQ(m.json_file, dir.path("ann.json"));
  EXPECT_EQ(m.image_root, dir.path("images"));
  EXPECT_EQ(m.evaluator_type, "coco");
  EXPECT_TRUE(m.thing_classes.empty());
  load_dataset("metadata_registered");
  EXPECT_EQ(m.thing_classes, written.class_names());
  EXPECT_EQ(m.dataset_id(1), written.category_id_of(1));
}

TEST(Metadata, ThingsThatDifferFromTheEntrysAreAnErrorNamingTheDataset) {
  Metadata& m = global_metadata().get("metadata_conflict");
  m.set_things({"cat", "dog"}, {1, 2});
  try {
    m.set_things({"cat", "wolf"}, {1, 2});
    ADD_FAILURE() << "changed a thing class";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "metadata of 'metadata_conflict': thing class 1 is 'dog' (id 2), cannot set it to "
              "'wolf' (id 2)");
  }
  EXPECT_THROW(m.set_things({"cat"}, {1}), Error);
  Metadata fresh;
  fresh.name = "x";
  EXPECT_THROW(fresh.set_things({"a", "b"}, {1, 1}), Error);  // ids must be distinct
  EXPECT_THROW(fresh.set_things({"a", "b"}, {1}), Error);
  fresh.keypoint_names = {"nose", "left_eye", "right_eye"};
  fresh.keypoint_flip_map = {{"left_eye", "right_ey"}};
  try {
    fresh.keypoint_flip_indices();
    ADD_FAILURE() << "a flip map naming no keypoint was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'right_ey'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace detkit::data

namespace detkit::data {
namespace {

TEST(Metadata, PersonSkeletonIsDetectron2sConnectionRules) {
  const Metadata& m = global_metadata().get("keypoints_coco_2017_train");
  const auto skeleton = m.keypoint_skeleton();
  ASSERT_EQ(skeleton.size(), 14u);
  EXPECT_EQ(skeleton[4].first, (std::array<int64_t, 2>{5, 6}));  // left - right shoulder
  EXPECT_EQ(skeleton[4].second, (std::array<int, 3>{255, 128, 0}));
  Metadata bad = m;
  bad.keypoint_connection_rules.push_back({"nose", "tail", {0, 0, 0}});
  try {
    bad.keypoint_skeleton();
    ADD_FAILURE() << "no error for an unknown keypoint";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("keypoint_connection_rules names 'tail'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace detkit::data
