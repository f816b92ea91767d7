// COCO person-keypoint files: keypoints, num_keypoints, the category's keypoint names and
// skeleton are read exactly; bad ones are errors naming the JSON path and annotation id; and
// Detectron2's MIN_KEYPOINTS_PER_IMAGE filter.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>

#include "detkit/data/coco/coco.h"
#include "detkit/utils/error.h"
#include "tests/data/coco_test_files.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

using testing::coco_annotation;
using testing::coco_image;
using testing::coco_json;

const char* kPerson =
    R"({"id": 1, "name": "person", "keypoints": ["a", "b"], "skeleton": [[1, 2]]})";

class CocoKeypointsTest : public ::testing::Test {
 protected:
  testing::TempDir dir_{"coco_keypoints"};

  CocoDataset load(const std::string& annotations, const std::string& category = kPerson,
                   const CocoLoadOptions& options = {}) {
    std::string images = coco_image(1, "a.jpg") + ", " + coco_image(2, "b.jpg");
    return load_coco_json(dir_.write("k.json", coco_json(images, annotations, category)), "",
                          options);
  }

  void expect_error(const std::string& annotations, std::initializer_list<std::string> parts,
                    const std::string& category = kPerson) {
    try {
      load(annotations, category);
      ADD_FAILURE() << "no error for:\n" << annotations;
    } catch (const Error& e) {
      std::string message = e.what();
      for (const std::string& part : parts)
        EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    }
  }
};

TEST_F(CocoKeypointsTest, ReadsKeypointsNamesAndSkeleton) {
  CocoDataset ds =
      load(coco_annotation(7, 1, 1, R"(, "keypoints": [1.5, 2, 2, 0, 0, 0], "num_keypoints": 1)") +
           ", " + coco_annotation(8, 1, 1) + ", " +
           coco_annotation(9, 2, 1, R"(, "keypoints": [3, 4, 1, 5, 6, 2])"));
  ASSERT_EQ(ds.num_annotations(), 3u);
  ASSERT_EQ(ds.categories()[0].keypoints, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(ds.categories()[0].skeleton.size(), 1u);
  EXPECT_EQ(ds.categories()[0].skeleton[0], (std::array<int64_t, 2>{1, 2}));
  auto a = ds.annotations_of(0);
  CoordSpan k = a[0].keypoints();
  EXPECT_EQ(std::vector<double>(k.begin(), k.end()), (std::vector<double>{1.5, 2, 2, 0, 0, 0}));
  EXPECT_EQ(a[0].num_keypoints(), 1);
  EXPECT_EQ(a[1].keypoints().size, 0u);  // none in the file
  EXPECT_EQ(a[1].num_keypoints(), 0);
  EXPECT_EQ(ds.annotations_of(1)[0].num_keypoints(), 2);  // counted when the file has no count
}

TEST_F(CocoKeypointsTest, BadKeypointsAreNamed) {
  expect_error(coco_annotation(7, 1, 1, R"(, "keypoints": [1, 2, 3, 0, 0, 0])"),
               {"annotations[0].keypoints[2]", "visibility of keypoint 0 must be 0, 1 or 2, got 3",
                "annotation id 7"});
  expect_error(coco_annotation(7, 1, 1, R"(, "keypoints": [1, 2, 2, 0, 0])"),
               {"annotations[0].keypoints", "5 values is not a multiple of 3"});
  expect_error(coco_annotation(7, 1, 1, R"(, "keypoints": [1, 2, "x"])"),
               {"annotations[0].keypoints[2]", "a number"});
  expect_error(coco_annotation(7, 1, 1, R"(, "keypoints": [1, 2, 2])"),
               {"annotations[0].keypoints: 3 values", "category 'person' (id 1) names 2 keypoints",
                "6 are expected", "annotation id 7"});
  expect_error(coco_annotation(7, 1, 1, R"(, "num_keypoints": -1)"),
               {"annotations[0].num_keypoints: must be >= 0"});
  expect_error("", {"categories[0].skeleton[0]: keypoint number 3 is outside 1..2"},
               R"({"id": 1, "name": "person", "keypoints": ["a", "b"], "skeleton": [[1, 3]]})");
  expect_error("", {"categories[0].skeleton[0]: expected a pair"},
               R"({"id": 1, "name": "person", "keypoints": ["a", "b"], "skeleton": [[1]]})");
  expect_error("", {"categories[0].keypoints[1]", "a string"},
               R"({"id": 1, "name": "person", "keypoints": ["a", 2]})");
}

TEST_F(CocoKeypointsTest, AnnotationDroppedForItsPolygonsLeavesNoKeypointsBehind) {
  CocoDataset ds = load(
      coco_annotation(7, 1, 1, R"(, "keypoints": [9, 9, 2, 9, 9, 2], "segmentation": [[1, 2]])") +
      ", " + coco_annotation(8, 1, 1, R"(, "keypoints": [1, 1, 2, 2, 2, 1])"));
  ASSERT_EQ(ds.num_annotations(), 1u);
  CoordSpan k = ds.annotation(0).keypoints();
  EXPECT_EQ(std::vector<double>(k.begin(), k.end()), (std::vector<double>{1, 1, 2, 2, 2, 1}));
}

// Detectron2's filter_images_with_few_keypoints: v > 0 points of every annotation, crowds too.
TEST_F(CocoKeypointsTest, MinKeypointsPerImageFilter) {
  const std::string annotations =
      coco_annotation(7, 1, 1, R"(, "keypoints": [1, 1, 2, 0, 0, 0])") + ", " +
      coco_annotation(8, 2, 1, R"(, "keypoints": [1, 1, 1, 2, 2, 2])") + ", " +
      coco_annotation(9, 2, 1, R"(, "keypoints": [1, 1, 2, 0, 0, 0], "iscrowd": 1)");
  CocoLoadOptions options;
  options.min_keypoints_per_image = 3;
  CocoDataset ds = load(annotations, kPerson, options);
  ASSERT_EQ(ds.num_images(), 1u);
  EXPECT_EQ(ds.image(0).id, 2);
  EXPECT_EQ(ds.num_annotations(), 2u);
  EXPECT_EQ(ds.stats().filtered_images, 1u);
  CoordSpan k = ds.annotation(1).keypoints();  // pools follow the annotations they belong to
  EXPECT_EQ(std::vector<double>(k.begin(), k.end()), (std::vector<double>{1, 1, 2, 0, 0, 0}));
  options.min_keypoints_per_image = 1;
  EXPECT_EQ(load(annotations, kPerson, options).num_images(), 2u);
}

// The synthetic person keypoints of ../shared: every value as the JSON has it.
TEST(CocoKeypointsShared, SyntheticPersonKeypointsMatchTheJson) {
  const std::string file = std::string(DETKIT_SHARED_DIR) +
                           "/fixtures/cocoeval_keypoints/person_keypoints_val2017_synth.json";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "shared fixture absent: " << file;
  CocoDataset ds = load_coco_json(file, "");
  nlohmann::json j = nlohmann::json::parse(std::ifstream(file));
  std::map<int64_t, const nlohmann::json*> by_id;
  for (const auto& a : j["annotations"]) by_id[a["id"]] = &a;
  ASSERT_EQ(ds.num_annotations(), by_id.size());
  size_t with_keypoints = 0, labelled = 0;
  for (size_t a = 0; a < ds.num_annotations(); ++a) {
    const nlohmann::json& want = *by_id.at(ds.annotation(a).id());
    CoordSpan k = ds.annotation(a).keypoints();
    ASSERT_EQ(std::vector<double>(k.begin(), k.end()),
              want["keypoints"].get<std::vector<double>>());
    EXPECT_EQ(ds.annotation(a).num_keypoints(), want["num_keypoints"].get<int>());
    with_keypoints += ds.annotation(a).num_keypoints() > 0;
    labelled += ds.annotation(a).num_keypoints();
  }
  EXPECT_EQ(with_keypoints, 140u);  // the fixture's README
  EXPECT_EQ(labelled, 2032u);
  EXPECT_EQ(ds.categories()[0].keypoints.size(), 17u);
  EXPECT_EQ(ds.categories()[0].skeleton.size(), 19u);
}

}  // namespace
}  // namespace detkit::data
