// COCO panoptic files (load_coco_panoptic_json): records as Detectron2's load_coco_panoptic_json
// gives them, and every bad input a named error.
#include <gtest/gtest.h>

#include <string>

#include "detkit/data/coco/panoptic_dataset.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

using testing::error_of;
using testing::expect_contains;

const char* kPanopticCategories =
    R"({"id": 201, "name": "band-top", "isthing": 0},
       {"id": 1, "name": "person", "isthing": 1},
       {"id": 3, "name": "car", "isthing": 1})";

const char* kPanopticImages =
    R"({"id": 7, "file_name": "a.jpg", "height": 4, "width": 6},
       {"id": 9, "file_name": "sub/b.jpg", "height": 5, "width": 3})";

std::string panoptic_json(const std::string& annotations,
                          const std::string& images = kPanopticImages,
                          const std::string& categories = kPanopticCategories) {
  return R"({"info": {}, "images": [)" + images + R"(], "annotations": [)" + annotations +
         R"(], "categories": [)" + categories + "]}";
}

const char* kTwoRecords =
    R"({"image_id": 9, "file_name": "sub/b.png", "segments_info": [
         {"id": 201000, "category_id": 201, "iscrowd": 0, "area": 10, "bbox": [0, 0, 3, 4]},
         {"id": 3001, "category_id": 3, "iscrowd": 1, "area": 5, "bbox": [1, 2, 1, 1]}]},
       {"image_id": 7, "file_name": "a.png", "segments_info": []})";

PanopticDataset load_text(const testing::TempDir& dir, const std::string& text) {
  return load_coco_panoptic_json(dir.write("panoptic.json", text), "imgs", "pngs");
}

TEST(PanopticJson, RecordsInFileOrderWithContiguousCategories) {
  testing::TempDir dir("panoptic_json_records");
  const PanopticDataset ds = load_text(dir, panoptic_json(kTwoRecords));
  ASSERT_EQ(ds.categories().size(), 3u);  // sorted by id: person, car, band-top
  EXPECT_EQ(ds.categories()[0].name, "person");
  EXPECT_EQ(ds.categories()[2].id, 201);
  EXPECT_FALSE(ds.categories()[2].isthing);
  ASSERT_EQ(ds.num_images(), 2u);
  EXPECT_EQ(ds.num_segments(), 2u);
  const PanopticImageView first = ds.image(0);
  EXPECT_EQ(first.id, 9);
  EXPECT_EQ(first.image_path, "imgs/sub/b.jpg");  // the PNG's stem + ".jpg", as Detectron2
  EXPECT_EQ(first.pan_seg_path, "pngs/sub/b.png");
  EXPECT_EQ(first.height, 5);
  EXPECT_EQ(first.width, 3);
  ASSERT_EQ(first.segments.size, 2u);
  EXPECT_EQ(first.segments[0].id, 201000);
  EXPECT_EQ(first.segments[0].contiguous_id, 2);
  EXPECT_FALSE(first.segments[0].isthing);
  EXPECT_EQ(first.segments[0].area, 10);
  EXPECT_EQ(first.segments[1].category_id, 3);
  EXPECT_EQ(first.segments[1].contiguous_id, 1);
  EXPECT_TRUE(first.segments[1].isthing);
  EXPECT_TRUE(first.segments[1].iscrowd);
  EXPECT_EQ(first.segments[1].bbox[1], 2);
  EXPECT_EQ(ds.image(1).segments.size, 0u);
  EXPECT_EQ(ds.image(1).image_path, "imgs/a.jpg");
}

TEST(PanopticJson, CategoriesAlone) {
  testing::TempDir dir("panoptic_json_categories");
  const auto categories = read_panoptic_categories(dir.write("p.json", panoptic_json(kTwoRecords)));
  ASSERT_EQ(categories.size(), 3u);
  EXPECT_EQ(categories[1].name, "car");
}

struct BadPanopticFile {
  const char* what;
  std::string text;
  std::string message;
};

class PanopticJsonErrors : public ::testing::TestWithParam<BadPanopticFile> {};

TEST_P(PanopticJsonErrors, AreNamed) {
  testing::TempDir dir("panoptic_json_errors");
  const std::string message = error_of([&] { load_text(dir, GetParam().text); });
  expect_contains(message, dir.path("panoptic.json") + ": ");
  expect_contains(message, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PanopticJsonErrors,
    ::testing::Values(
        BadPanopticFile{"unknown_category",
                        panoptic_json(R"({"image_id": 7, "file_name": "a.png", "segments_info": [
                          {"id": 5, "category_id": 1}, {"id": 6, "category_id": 99}]})"),
                        "annotations[0].segments_info[1]: category_id 99 is not in categories "
                        "(image id 7)"},
        BadPanopticFile{"image_annotated_twice",
                        panoptic_json(R"({"image_id": 7, "file_name": "a.png", "segments_info": []},
                          {"image_id": 9, "file_name": "b.png", "segments_info": []},
                          {"image_id": 7, "file_name": "c.png", "segments_info": []})"),
                        "annotations[2]: image id 7 listed twice (also annotations[0])"},
        BadPanopticFile{"image_listed_twice",
                        panoptic_json("", R"({"id": 7, "height": 4, "width": 6},
                                             {"id": 7, "height": 4, "width": 6})"),
                        "images[1]: image id 7 listed twice (also images[0])"},
        BadPanopticFile{
            "image_not_in_images",
            panoptic_json(R"({"image_id": 8, "file_name": "a.png", "segments_info": []})"),
            "annotations[0]: image id 8 is not in images"},
        BadPanopticFile{"segment_id_twice",
                        panoptic_json(R"({"image_id": 7, "file_name": "a.png", "segments_info": [
                          {"id": 5, "category_id": 1}, {"id": 5, "category_id": 3}]})"),
                        "annotations[0].segments_info[1]: segment id 5 listed twice (also "
                        "segments_info[0]; image id 7)"},
        BadPanopticFile{"segment_id_zero",
                        panoptic_json(R"({"image_id": 7, "file_name": "a.png", "segments_info": [
                          {"id": 0, "category_id": 1}]})"),
                        "annotations[0].segments_info[0].id: 0 is not a PNG segment id"},
        BadPanopticFile{
            "category_twice",
            panoptic_json("", kPanopticImages, R"({"id": 1, "name": "a"}, {"id": 1, "name": "b"})"),
            "categories[1]: category id 1 listed twice (also categories[0])"},
        BadPanopticFile{"missing_segments",
                        panoptic_json(R"({"image_id": 7, "file_name": "a.png"})"),
                        "annotations[0]: missing key \"segments_info\""},
        BadPanopticFile{
            "wrong_type",
            panoptic_json(R"({"image_id": "7", "file_name": "a.png", "segments_info": []})"),
            "annotations[0].image_id: "},
        BadPanopticFile{
            "escaping_file_name",
            panoptic_json(R"({"image_id": 7, "file_name": "../a.png", "segments_info": []})"),
            "annotations[0].file_name: \"../a.png\" is not a file inside the panoptic "
            "root"},
        BadPanopticFile{"missing_categories", R"({"images": [], "annotations": []})",
                        "missing top-level key \"categories\""},
        BadPanopticFile{"malformed", R"({"images": [}, "annotations": [], "categories": []})",
                        "malformed JSON"}),
    [](const auto& info) { return std::string(info.param.what); });

}  // namespace
}  // namespace detkit::data
