// LVIS files (detkit/data/coco/lvis.h): LVIS's fields kept, file names from coco_url, the tiny
// LVIS fixture's counts and categories as Detectron2 loaded them, and every bad input a named
// error (the file, the JSON path, the id) with nothing loaded.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>

#include "detkit/data/coco/lvis.h"
#include "detkit/utils/error.h"
#include "tests/data/lvis_test_files.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

using testing::lvis_annotation;
using testing::lvis_category;
using testing::lvis_image;
using testing::lvis_json;

const std::string kTwoCategories =
    lvis_category(1, "aerosol_can", "c", 5, "\"aerosol_can\", \"spray_can\"") + ", " +
    lvis_category(2, "air_conditioner", "r", 1, "\"air_conditioner\"");

std::vector<int64_t> ids(IdSpan span) { return {span.begin(), span.end()}; }

class LvisTest : public ::testing::Test {
 protected:
  testing::TempDir dir_{"lvis"};

  std::string write(const std::string& text) { return dir_.write("lvis.json", text); }

  // Loading `text` fails with a message starting with the file and holding every one of `parts`.
  void expect_error(const std::string& text, std::initializer_list<std::string> parts) {
    const std::string file = write(text);
    try {
      load_lvis_json(file, dir_.path("coco/"));
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const Error& e) {
      const std::string message = e.what();
      std::cout << "  error: " << message << "\n";
      EXPECT_EQ(message.rfind(file + ": ", 0), 0u) << message;
      for (const std::string& part : parts)
        EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    }
  }
};

TEST_F(LvisTest, KeepsLvisFieldsAndNamesFilesByCocoUrl) {
  // Images out of id order: the lists follow their image when the images are sorted.
  const std::string images =
      lvis_image(7, "http://images.cocodataset.org/train2017/000000000007.jpg",
                 ", \"neg_category_ids\": [2], \"not_exhaustive_category_ids\": [1, 2]") +
      ", " +
      lvis_image(3, "http://images.cocodataset.org/val2017/000000000003.jpg",
                 ", \"file_name\": \"COCO_val2014_000000000003.jpg\", "
                 "\"not_exhaustive_category_ids\": [], \"neg_category_ids\": [1]") +
      ", " + lvis_image(5, "http://images.cocodataset.org/val2017/000000000005.jpg");
  const std::string annotations = lvis_annotation(10, 7, 2, ", \"iscrowd\": 1") + ", " +
                                  lvis_annotation(11, 3, 1) + ", " + lvis_annotation(12, 7, 1);
  const CocoDataset ds =
      load_lvis_json(write(lvis_json(images, annotations, kTwoCategories)), "/data/coco/");
  EXPECT_EQ(ds.format(), JsonFormat::kLvis);
  ASSERT_EQ(ds.num_images(), 3u);
  EXPECT_EQ(ds.image(0).id, 3);
  EXPECT_EQ(ds.image(0).file_name, "val2017/000000000003.jpg");  // not the v0.5 file_name
  EXPECT_EQ(ds.image_path(0), "/data/coco/val2017/000000000003.jpg");
  EXPECT_EQ(ds.image_path(2), "/data/coco/train2017/000000000007.jpg");
  EXPECT_EQ(ids(ds.neg_category_ids(0)), std::vector<int64_t>({1}));
  EXPECT_TRUE(ids(ds.not_exhaustive_category_ids(0)).empty());
  EXPECT_TRUE(ids(ds.neg_category_ids(1)).empty());  // absent: []
  EXPECT_TRUE(ids(ds.not_exhaustive_category_ids(1)).empty());
  EXPECT_EQ(ids(ds.neg_category_ids(2)), std::vector<int64_t>({2}));
  EXPECT_EQ(ids(ds.not_exhaustive_category_ids(2)), std::vector<int64_t>({1, 2}));
  // No crowd regions in LVIS: "iscrowd" is not read.
  EXPECT_EQ(ds.num_crowd(), 0u);
  ASSERT_EQ(ds.annotations_of(2).size(), 2u);
  EXPECT_EQ(ds.annotations_of(2)[0].id(), 10);
  EXPECT_FALSE(ds.annotations_of(2)[0].iscrowd());
  EXPECT_EQ(ds.annotations_of(2)[0].class_index(), 1);  // id 2 - 1
  EXPECT_EQ(ds.annotations_of(2)[0].num_polygons(), 1u);
  // Categories: names are the first synonyms; frequency and image_count kept.
  EXPECT_EQ(ds.class_names(), std::vector<std::string>({"aerosol_can", "air_conditioner"}));
  EXPECT_EQ(ds.categories()[0].synonyms.size(), 2u);
  EXPECT_EQ(ds.categories()[0].frequency, "c");
  EXPECT_EQ(ds.categories()[1].frequency, "r");
  EXPECT_EQ(ds.categories()[0].image_count, 5);
  EXPECT_EQ(ds.categories()[1].image_count, 1);
}

TEST_F(LvisTest, ClassNamesAreTheFirstSynonyms) {
  const std::string categories =
      lvis_category(1, "bottle_cap", "f", 1, "\"cap_(bottle)\", \"bottle_cap\"");
  const CocoDataset ds =
      load_lvis_json(write(lvis_json(lvis_image(1, "http://x/val2017/1.jpg"), "", categories)), "");
  EXPECT_EQ(ds.class_names(), std::vector<std::string>({"cap_(bottle)"}));
  EXPECT_EQ(ds.categories()[0].name, "bottle_cap");
}

TEST_F(LvisTest, FilterEmptyAnnotationsKeepsTheListsOfTheImagesLeft) {
  const std::string images =
      lvis_image(1, "http://x/val2017/1.jpg", ", \"neg_category_ids\": [1]") + ", " +
      lvis_image(2, "http://x/val2017/2.jpg", ", \"neg_category_ids\": [2]");
  CocoLoadOptions options;
  options.filter_empty_annotations = true;
  const CocoDataset ds = load_lvis_json(
      write(lvis_json(images, lvis_annotation(1, 2, 1), kTwoCategories)), "", options);
  ASSERT_EQ(ds.num_images(), 1u);
  EXPECT_EQ(ds.image(0).id, 2);
  EXPECT_EQ(ids(ds.neg_category_ids(0)), std::vector<int64_t>({2}));
}

TEST_F(LvisTest, ACategoryIdOutsideTheCategoriesIsNamed) {
  expect_error(
      lvis_json(lvis_image(1, "http://x/val2017/1.jpg"), lvis_annotation(42, 1, 9), kTwoCategories),
      {"annotations[0]: category_id 9 is not in categories (annotation id 42)"});
}

TEST_F(LvisTest, AnImageListedTwiceIsNamed) {
  expect_error(lvis_json(lvis_image(8, "http://x/val2017/8.jpg") + ", " +
                             lvis_image(8, "http://x/val2017/8b.jpg"),
                         "", kTwoCategories),
               {"images[0] and images[1] have the same id 8"});
}

TEST_F(LvisTest, CategoryIdsMustBeOneToK) {
  expect_error(lvis_json(lvis_image(1, "http://x/val2017/1.jpg"), "",
                         lvis_category(1, "a", "r", 1) + ", " + lvis_category(3, "b", "r", 1)),
               {"categories: LVIS category ids must be 1..2", "has id 3 where id 2 is expected"});
}

TEST_F(LvisTest, ImagesNeedAUsableCocoUrl) {
  expect_error(lvis_json("{\"id\": 4, \"file_name\": \"a.jpg\", \"height\": 4, \"width\": 6}", "",
                         kTwoCategories),
               {"images[0]: missing key \"coco_url\"", "(image id 4)"});
  expect_error(
      lvis_json(lvis_image(4, "000000000004.jpg"), "", kTwoCategories),
      {"images[0].coco_url: \"000000000004.jpg\" does not end in <folder>/<file>", "(image id 4)"});
  expect_error(lvis_json(lvis_image(4, "http://x/val2017/"), "", kTwoCategories),
               {"images[0].coco_url: \"http://x/val2017/\" does not end in <folder>/<file>"});
  expect_error(lvis_json(lvis_image(4, "http://x/../a.jpg"), "", kTwoCategories),
               {"images[0].coco_url: \"http://x/../a.jpg\" gives \"../a.jpg\", which is not a path "
                "inside the image root"});
  expect_error(
      lvis_json("{\"id\": 4, \"coco_url\": 12, \"height\": 4, \"width\": 6}", "", kTwoCategories),
      {"images[0].coco_url: expected a string, got an integer (image id 4)"});
}

TEST_F(LvisTest, CategoryListsOfImagesMustBeIds) {
  expect_error(
      lvis_json(lvis_image(4, "http://x/val2017/4.jpg", ", \"neg_category_ids\": [1, \"a\"]"), "",
                kTwoCategories),
      {"images[0].neg_category_ids[1]: expected an integer, got a string (image id 4)"});
  expect_error(
      lvis_json(lvis_image(4, "http://x/val2017/4.jpg", ", \"not_exhaustive_category_ids\": 3"), "",
                kTwoCategories),
      {"images[0].not_exhaustive_category_ids: expected an array, got an integer"});
}

TEST_F(LvisTest, SegmentationsMustBeValidPolygons) {
  const std::string image = lvis_image(1, "http://x/val2017/1.jpg");
  expect_error(
      lvis_json(image, lvis_annotation(5, 1, 1, "", "[[1, 1, 3, 1, 3, 3], [1, 2, 3, 4]]"),
                kTwoCategories),
      {"annotations[0].segmentation[1]: a polygon with fewer than 3 points", "(annotation id 5)"});
  expect_error(lvis_json(image, lvis_annotation(5, 1, 1, "", "[]"), kTwoCategories),
               {"annotations[0].segmentation: no polygon", "(annotation id 5)"});
  expect_error(
      lvis_json(image, lvis_annotation(5, 1, 1, "", "{\"counts\": [0, 24], \"size\": [4, 6]}"),
                kTwoCategories),
      {"annotations[0].segmentation: an RLE; LVIS annotations have polygons", "(annotation id 5)"});
  expect_error(
      lvis_json(image, "{\"id\": 5, \"image_id\": 1, \"category_id\": 1, \"bbox\": [1, 1, 2, 2]}",
                kTwoCategories),
      {"annotations[0]: missing key \"segmentation\"", "(annotation id 5)"});
}

TEST_F(LvisTest, CategoryFieldsAreChecked) {
  const std::string image = lvis_image(1, "http://x/val2017/1.jpg");
  expect_error(
      lvis_json(image, "", lvis_category(1, "a", "x", 1)),
      {"categories[0].frequency: must be \"r\", \"c\" or \"f\", got \"x\"", "(category id 1)"});
  expect_error(lvis_json(image, "", lvis_category(1, "a", "r", -2)),
               {"categories[0].image_count: must be >= 0, got -2"});
  expect_error(lvis_json(image, "", lvis_category(1, "a", "r", 1, "\"a\", 3")),
               {"categories[0].synonyms[1]: expected a string, got an integer"});
}

TEST_F(LvisTest, CheckListsEveryProblem) {
  const std::string text = lvis_json(
      lvis_image(1, "http://x/val2017/1.jpg") + ", " + lvis_image(1, "x.jpg"),
      lvis_annotation(5, 1, 7) + ", " + lvis_annotation(6, 1, 1, "", "[]"), kTwoCategories);
  const std::vector<std::string> problems = check_lvis_json(write(text), "");
  for (const auto& p : problems) std::cout << "  problem: " << p << "\n";
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_NE(problems[0].find("images[1].coco_url"), std::string::npos);
  EXPECT_NE(problems[1].find("annotations[1].segmentation: no polygon"), std::string::npos);
  EXPECT_NE(problems[2].find("category_id 7 is not in categories (annotation id 5)"),
            std::string::npos);
}

TEST_F(LvisTest, CocoFilesLoadAsBefore) {
  // The COCO loader reads no LVIS field: file_name names the file, iscrowd is read.
  const std::string text =
      "{\"images\": [{\"id\": 1, \"file_name\": \"a.jpg\", \"coco_url\": \"http://x/b/c.jpg\", "
      "\"height\": 4, \"width\": 6, \"neg_category_ids\": [1]}], \"annotations\": [{\"id\": 2, "
      "\"image_id\": 1, \"category_id\": 3, \"bbox\": [1, 1, 2, 2], \"iscrowd\": 1}], "
      "\"categories\": [{\"id\": 3, \"name\": \"car\", \"synonyms\": [\"auto\"]}]}";
  const CocoDataset ds = load_coco_json(write(text), "");
  EXPECT_EQ(ds.format(), JsonFormat::kCoco);
  EXPECT_EQ(ds.image(0).file_name, "a.jpg");
  EXPECT_EQ(ds.num_crowd(), 1u);
  EXPECT_TRUE(ids(ds.neg_category_ids(0)).empty());
  EXPECT_EQ(ds.class_names(), std::vector<std::string>({"car"}));
}

// The fixture as Detectron2's load_lvis_json read it (expected_s1.json's detectron2_load_lvis_json:
// its counts) and its categories as the README describes them.
TEST(LvisTiny, LoadsAsDetectron2Did) {
  DETKIT_SKIP_WITHOUT_LVIS_TINY();
  const nlohmann::json expected =
      nlohmann::json::parse(std::ifstream(testing::lvis_fixture_dir() + "expected_s1.json"));
  const nlohmann::json& d2 = expected.at("detectron2_load_lvis_json");
  const CocoDataset ds = load_lvis_json(testing::lvis_tiny_json(), testing::lvis_tiny_image_root());
  EXPECT_EQ(ds.num_images(), d2.at("images").get<size_t>());
  EXPECT_EQ(ds.num_annotations(), d2.at("annotations").get<size_t>());
  size_t found = 0, negative = 0, not_exhaustive = 0;
  for (size_t i = 0; i < ds.num_images(); ++i) {
    found += std::filesystem::exists(ds.image_path(i));
    negative += ds.neg_category_ids(i).size;
    not_exhaustive += ds.not_exhaustive_category_ids(i).size;
  }
  EXPECT_EQ(found, d2.at("image_files_found").get<size_t>());
  EXPECT_EQ(negative, 1218u);  // the README's pairs
  EXPECT_EQ(not_exhaustive, 26u);
  ASSERT_EQ(ds.num_classes(), 80u);
  const nlohmann::json& groups = expected.at("frequency_groups");
  for (const std::string f : {"r", "c", "f"}) {
    std::set<int64_t> want = groups.at(f).get<std::set<int64_t>>(), got;
    for (const Category& c : ds.categories())
      if (c.frequency == f) got.insert(c.id);
    EXPECT_EQ(got, want) << "frequency " << f;
  }
  // image_count: the images holding the category.
  std::vector<std::set<size_t>> images_of(ds.num_classes());
  for (size_t i = 0; i < ds.num_images(); ++i)
    for (AnnotationView a : ds.annotations_of(i)) images_of[a.class_index()].insert(i);
  for (size_t k = 0; k < ds.num_classes(); ++k)
    EXPECT_EQ(ds.categories()[k].image_count, static_cast<int64_t>(images_of[k].size())) << k;
  std::cout << "[ lvis ] " << ds.num_images() << " images, " << ds.num_annotations()
            << " annotations, " << found << " image files found, " << negative << " negative and "
            << not_exhaustive << " not-exhaustive (image, category) pairs\n";
}

}  // namespace
}  // namespace detkit::data
