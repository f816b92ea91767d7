// Bad results files give an error naming the entry; good ones read as pycocotools' loadRes.
#include <gtest/gtest.h>

#include "detkit/evaluation/coco_results.h"
#include "detkit/utils/error.h"

namespace detkit::evaluation {
namespace {

const GroundTruthIds kIds{{1, 2}, {5, 7}};

void expect_error(const std::string& json, IouType type, const std::string& fragment) {
  try {
    parse_coco_results(json, "res.json", type, kIds);
    ADD_FAILURE() << "expected an error for " << json;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message '" << e.what() << "' lacks '" << fragment << "'";
  }
}

}  // namespace

TEST(CocoResults, ReadsBboxAndSegm) {
  auto bbox = parse_coco_results(
      R"([{"image_id": 1, "category_id": 5, "score": 0.9, "bbox": [1, 2, 3, 4]},
          {"image_id": 2, "category_id": 7, "score": 0.5, "bbox": [0, 0, 2.5, 2]}])",
      "res.json", IouType::Bbox, kIds);
  ASSERT_EQ(bbox.size(), 2u);
  EXPECT_EQ(bbox[0].id, 1);
  EXPECT_EQ(bbox[1].id, 2);
  EXPECT_EQ(bbox[0].area, 12.0);
  EXPECT_EQ(bbox[1].area, 5.0);
  // A 2x3 mask with pixels (row 1, col 0) and (row 0, col 1) on: runs 1,1,1,3 column-major.
  auto segm = parse_coco_results(
      R"([{"image_id": 1, "category_id": 5, "score": 0.3,
           "segmentation": {"size": [2, 3], "counts": [1, 2, 3]}}])",
      "res.json", IouType::Segm, kIds);
  ASSERT_EQ(segm.size(), 1u);
  EXPECT_EQ(segm[0].area, 2.0);
  EXPECT_EQ(segm[0].bbox, (std::array<double, 4>{0, 0, 2, 2}));
  EXPECT_TRUE(parse_coco_results("[]", "res.json", IouType::Bbox, kIds).empty());
}

TEST(CocoResults, BadInputNamesTheEntry) {
  expect_error(R"({"image_id": 1})", IouType::Bbox, "res.json: results must be a JSON list");
  expect_error(R"([{"image_id": 1, "category_id": 5, "score": 0.9, "bbox": [1, 2, 3)",
               IouType::Bbox, "res.json: not valid JSON");
  expect_error(R"([{"image_id": 1, "category_id": 5, "score": 1, "bbox": [0, 0, 1, 1]},
                   {"image_id": 9, "category_id": 5, "score": 1, "bbox": [0, 0, 1, 1]}])",
               IouType::Bbox, "results[1]: image_id 9 is not in the ground truth");
  expect_error(R"([{"image_id": 1, "category_id": 6, "score": 1, "bbox": [0, 0, 1, 1]}])",
               IouType::Bbox, "results[0]: category_id 6 is not in the ground truth");
  expect_error(R"([{"image_id": 1, "category_id": 5, "score": 1, "bbox": [0, 0, -1, 1]}])",
               IouType::Bbox, "results[0]: \"bbox\" has a negative size");
  expect_error(R"([{"image_id": 1, "category_id": 5, "score": 1, "bbox": [0, 0, 1]}])",
               IouType::Bbox, "\"bbox\" must be [x, y, width, height]");
  expect_error(R"([{"image_id": 1, "category_id": 5, "bbox": [0, 0, 1, 1]}])", IouType::Bbox,
               "results[0]: missing \"score\"");
  expect_error(R"([{"image_id": "1", "category_id": 5, "score": 1, "bbox": [0, 0, 1, 1]}])",
               IouType::Bbox, "\"image_id\" must be a number");
  expect_error(R"([3])", IouType::Bbox, "results[0]: each detection must be a JSON object");
  expect_error(R"([{"image_id": 1, "category_id": 5, "score": 1,
                    "segmentation": {"size": [2, 3], "counts": "#bad"}}])",
               IouType::Segm, "results[0]: malformed RLE");
  expect_error(R"([{"image_id": 1, "category_id": 5, "score": 1,
                    "segmentation": {"size": [2, 3], "counts": [1, 2]}}])",
               IouType::Segm, "results[0]: malformed RLE");
  expect_error(R"([{"image_id": 1, "category_id": 5, "score": 1, "bbox": [0, 0, 1, 1]}])",
               IouType::Segm, "results[0]: missing \"segmentation\"");
}

}  // namespace detkit::evaluation
