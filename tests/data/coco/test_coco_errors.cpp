// Bad COCO files: each problem is a detkit::Error naming the file and the place (JSON path, image
// or annotation id, byte offset), and check_coco_json lists them all.
#include <gtest/gtest.h>

#include <initializer_list>

#include "detkit/data/coco/coco.h"
#include "detkit/utils/error.h"
#include "tests/data/coco_test_files.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

using testing::coco_annotation;
using testing::coco_image;
using testing::coco_json;
using testing::kTwoCategories;

class CocoErrorsTest : public ::testing::Test {
 protected:
  testing::TempDir dir_{"coco_errors"};

  // Loading `text` fails with a message holding the file's path and every one of `parts`.
  void expect_error(const std::string& text, std::initializer_list<std::string> parts,
                    const CocoLoadOptions& options = {}) {
    std::string file = dir_.write("instances.json", text);
    try {
      load_coco_json(file, dir_.path("images"), options);
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const Error& e) {
      std::string message = e.what();
      EXPECT_EQ(message.rfind(file + ": ", 0), 0u) << message;
      for (const std::string& part : parts) {
        EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
      }
    }
  }
};

TEST_F(CocoErrorsTest, AValidFileLoads) {
  std::string file =
      dir_.write("instances.json",
                 coco_json(coco_image(1, "a.jpg"), coco_annotation(5, 1, 3), kTwoCategories));
  CocoDataset ds = load_coco_json(file, dir_.path("images"));
  EXPECT_EQ(ds.num_images(), 1u);
  EXPECT_EQ(ds.num_annotations(), 1u);
  EXPECT_EQ(ds.annotation(0).class_index(), 1);  // ids 1, 3 -> indices 0, 1
}

TEST_F(CocoErrorsTest, MalformedJsonNamesTheByteOffset) {
  // A bracket closed by the wrong bracket: found by the streaming scanner, exact offset.
  std::string text = coco_json(coco_image(1, "a.jpg"), coco_annotation(5, 1, 3, "", "[1, 1, 2, 2}"),
                               kTwoCategories);
  expect_error(text, {"malformed JSON at byte offset " +
                          std::to_string(text.find('}', text.find("[1, 1, 2, 2"))),
                      "in annotations[0]", "unexpected '}', expected ']'"});
  // A broken number: found by simdjson; the offset points into the annotation.
  text = coco_json(coco_image(1, "a.jpg"), coco_annotation(5, 1, 3, "", "[1, 1, 2x, 2]"),
                   kTwoCategories);
  expect_error(text, {"malformed JSON at byte offset ", "in annotations[0]"});
  // A truncated file.
  text = coco_json(coco_image(1, "a.jpg"), coco_annotation(5, 1, 3), kTwoCategories);
  text.resize(text.find("\"annotations\"") + 30);
  expect_error(text, {"malformed JSON at byte offset " + std::to_string(text.size()),
                      "unexpected end of file"});
  // Missing comma between top-level members, and content after the top-level object.
  expect_error("{\"images\": [] \"annotations\": []}",
               {"malformed JSON at byte offset 14", "expected ',' or '}'"});
  expect_error(coco_json("", "", "") + " x", {"unexpected 'x' after the top-level object"});
  expect_error("[]", {"malformed JSON at byte offset 0", "the top level must be an object"});
  expect_error("", {"malformed JSON at byte offset 0", "found end of file"});
}

TEST_F(CocoErrorsTest, MalformedJsonInsideAnElementIsPinnedToIt) {
  std::string bad =
      "{\"id\": 7, \"image_id\": 1, \"category_id\": 1, \"bbox\": [1, 1, 2, 2], "
      "\"area\": 1.2.3}";
  std::string text = coco_json(
      coco_image(1, "a.jpg"),
      coco_annotation(5, 1, 3) + ", " + bad + ", " + coco_annotation(9, 1, 3), kTwoCategories);
  std::string file = dir_.write("instances.json", text);
  std::vector<std::string> problems = check_coco_json(file, "");
  ASSERT_EQ(problems.size(), 1u);
  uint64_t start = text.find(bad), end = start + bad.size();
  const std::string prefix = file + ": malformed JSON at byte offset ";
  ASSERT_EQ(problems[0].rfind(prefix, 0), 0u) << problems[0];
  uint64_t offset = std::stoull(problems[0].substr(prefix.size()));
  EXPECT_GE(offset, start);
  EXPECT_LE(offset, end);
  EXPECT_NE(problems[0].find("in annotations[1]"), std::string::npos) << problems[0];
}

TEST_F(CocoErrorsTest, MissingTopLevelKeysAndWrongTypes) {
  expect_error("{\"images\": [], \"categories\": []}", {"missing top-level key \"annotations\""});
  expect_error("{\"images\": {}, \"annotations\": [], \"categories\": []}",
               {"images: expected an array, got object"});
  expect_error(
      coco_json(coco_image(1, "a.jpg"),
                coco_annotation(5, 1, 3) + ", " + coco_annotation(6, 1, 3, "", "\"1 1 2 2\""),
                kTwoCategories),
      {"annotations[1].bbox: expected an array, got a string", "(annotation id 6)"});
  expect_error(
      coco_json("{\"id\": 1, \"file_name\": 3, \"height\": 4, \"width\": 6}", "", kTwoCategories),
      {"images[0].file_name: expected a string, got an integer", "(image id 1)"});
  expect_error(coco_json(coco_image(1, "a.jpg"), coco_annotation(5, 1, 3, ", \"iscrowd\": 2"),
                         kTwoCategories),
               {"annotations[0].iscrowd: must be 0 or 1, got 2", "(annotation id 5)"});
  expect_error(
      coco_json(coco_image(1, "a.jpg"),
                coco_annotation(5, 1, 3, ", \"segmentation\": [[1, 2, 3, \"x\", 5, 6]]"),
                kTwoCategories),
      {"annotations[0].segmentation[0][3]: expected a number, got a string", "(annotation id 5)"});
  expect_error(coco_json(coco_image(1, "a.jpg"), "[5]", kTwoCategories),
               {"annotations[0]: expected an object, got an array"});
  expect_error(coco_json(coco_image(1, "a.jpg"), "", "{\"id\": 1.5, \"name\": \"x\"}"),
               {"categories[0].id: expected an integer, got a floating-point number"});
  expect_error(
      coco_json(coco_image(1, "a.jpg"), coco_annotation(5, 1, 3, ", \"id\": 8"), kTwoCategories),
      {"annotations[0].id: duplicate key"});
}

TEST_F(CocoErrorsTest, UnknownCategoryNamesTheAnnotation) {
  expect_error(
      coco_json(coco_image(1, "a.jpg"),
                coco_annotation(5, 1, 3) + ", " + coco_annotation(17, 1, 99), kTwoCategories),
      {"annotations[1]: category_id 99 is not in categories", "(annotation id 17)"});
}

TEST_F(CocoErrorsTest, DuplicateIds) {
  expect_error(
      coco_json(coco_image(1, "a.jpg"), coco_annotation(5, 1, 3) + ", " + coco_annotation(5, 1, 1),
                kTwoCategories),
      {"annotations[0] and annotations[1] have the same id 5"});
  expect_error(coco_json(coco_image(1, "a.jpg") + ", " + coco_image(2, "b.jpg") + ", " +
                             coco_image(1, "c.jpg"),
                         "", kTwoCategories),
               {"images[0] and images[2] have the same id 1"});
  expect_error(coco_json(coco_image(1, "a.jpg"), "",
                         "{\"id\": 3, \"name\": \"car\"}, {\"id\": 3, \"name\": \"bus\"}"),
               {"categories[0] and categories[1] have the same id 3"});
}

TEST_F(CocoErrorsTest, BboxMissingOrNegative) {
  expect_error(coco_json(coco_image(1, "a.jpg"), "{\"id\": 5, \"image_id\": 1, \"category_id\": 3}",
                         kTwoCategories),
               {"annotations[0]: missing key \"bbox\"", "(annotation id 5)"});
  expect_error(coco_json(coco_image(1, "a.jpg"), coco_annotation(5, 1, 3, "", "[1, 2, -3, 4]"),
                         kTwoCategories),
               {"annotations[0].bbox: width and height must be >= 0, got [1, 2, -3, 4]",
                "(annotation id 5)"});
  expect_error(
      coco_json(coco_image(1, "a.jpg"), coco_annotation(5, 1, 3, "", "[1, 2, 3]"), kTwoCategories),
      {"annotations[0].bbox: expected 4 numbers [x, y, width, height], got 3"});
}

TEST_F(CocoErrorsTest, AnnotationOfAnUnknownImage) {
  expect_error(coco_json(coco_image(1, "a.jpg"), coco_annotation(5, 42, 3), kTwoCategories),
               {"annotations[0]: image_id 42 is not in images", "(annotation id 5)"});
}

TEST_F(CocoErrorsTest, FileNamesMustStayInsideTheImageRoot) {
  for (const char* name : {"../x.jpg", "/etc/passwd", "a/../../x.jpg", "./..", ""}) {
    expect_error(
        coco_json(coco_image(7, name), "", kTwoCategories),
        {std::string("images[0].file_name: \"") + name + "\" is not a path inside the image root",
         "(image id 7)"});
  }
  EXPECT_TRUE(file_name_stays_inside_root("a/../b.jpg"));
  EXPECT_TRUE(file_name_stays_inside_root("train/./x.jpg"));
  EXPECT_FALSE(file_name_stays_inside_root("a/.."));
}

TEST_F(CocoErrorsTest, ImagesOverThePixelLimit) {
  CocoLoadOptions options;
  options.max_image_pixels = 5 * 6;
  std::string file = dir_.write("ok.json", coco_json(coco_image(1, "a.jpg", 5, 6), "", ""));
  EXPECT_EQ(load_coco_json(file, "", options).num_images(), 1u);
  expect_error(
      coco_json(coco_image(1, "a.jpg", 5, 6) + ", " + coco_image(2, "b.jpg", 6, 6), "", ""),
      {"images[1]: width * height = 6 * 6 = 36 pixels is over the limit of 30", "(image id 2)"},
      options);
  expect_error(coco_json(coco_image(1, "a.jpg", 0, 6), "", ""),
               {"images[0].height: must be a positive 32-bit integer, got 0", "(image id 1)"});
  CocoLoadOptions defaults;  // PIL's decompression-bomb limit
  expect_error(coco_json(coco_image(1, "a.jpg", 20000, 20000), "", ""),
               {"over the limit of 89478485"}, defaults);
}

TEST_F(CocoErrorsTest, BadRle) {
  expect_error(coco_json(coco_image(1, "a.jpg", 4, 6),
                         coco_annotation(5, 1, 3,
                                         ", \"iscrowd\": 1, \"segmentation\": {\"counts\": [3, 4], "
                                         "\"size\": [4, 6]}"),
                         kTwoCategories),
               {"annotations[0].segmentation: ", "(annotation id 5)"});
  expect_error(coco_json(coco_image(1, "a.jpg", 4, 6),
                         coco_annotation(5, 1, 3,
                                         ", \"iscrowd\": 1, \"segmentation\": {\"counts\": [3, 9], "
                                         "\"size\": [3, 4]}"),
                         kTwoCategories),
               {"annotations[0].segmentation.size: [3, 4] differs from the height and width "
                "[4, 6] of image id 1",
                "(annotation id 5)"});
  expect_error(coco_json(coco_image(1, "a.jpg", 4, 6),
                         coco_annotation(5, 1, 3, ", \"segmentation\": {\"counts\": \"!!\"}"),
                         kTwoCategories),
               {"annotations[0].segmentation: missing key \"size\""});
}

TEST_F(CocoErrorsTest, MissingFile) {
  EXPECT_THROW(
      {
        try {
          load_coco_json(dir_.path("absent.json"), "");
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find(dir_.path("absent.json")), std::string::npos);
          throw;
        }
      },
      Error);
}

TEST_F(CocoErrorsTest, CheckListsEveryProblemInOrder) {
  std::string text = coco_json(
      coco_image(1, "a.jpg") + ", " + coco_image(2, "../b.jpg") + ", " + coco_image(1, "c.jpg"),
      coco_annotation(5, 1, 3) + ", " + coco_annotation(6, 1, 99) + ", " +
          coco_annotation(7, 1, 3, "", "[0, 0, -1, 1]") + ", " + coco_annotation(8, 77, 1) + ", " +
          coco_annotation(9, 2, 1),  // image 2 was rejected: not reported again
      kTwoCategories);
  std::string file = dir_.write("instances.json", text);
  std::vector<std::string> problems = check_coco_json(file, "");
  std::vector<std::string> expected = {
      file + ": images[1].file_name: \"../b.jpg\" is not a path inside the image root (image id 2)",
      file +
          ": annotations[2].bbox: width and height must be >= 0, got [0, 0, -1, 1] "
          "(annotation id 7)",
      file + ": images[0] and images[2] have the same id 1",
      file + ": annotations[1]: category_id 99 is not in categories (annotation id 6)",
      file + ": annotations[3]: image_id 77 is not in images (annotation id 8)",
  };
  EXPECT_EQ(problems, expected);
  // load_coco_json stops at the first of them.
  try {
    load_coco_json(file, "");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), expected[0]);
  }
}

TEST_F(CocoErrorsTest, CheckStopsAtMalformedJson) {
  std::string text =
      coco_json(coco_image(1, "../a.jpg"), coco_annotation(5, 1, 3, "", "[1, 2}"), kTwoCategories);
  std::vector<std::string> problems = check_coco_json(dir_.write("bad.json", text), "");
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("images[0].file_name"), std::string::npos);
  EXPECT_NE(problems[1].find("malformed JSON"), std::string::npos);
}

}  // namespace
}  // namespace detkit::data
