// Detectron2's loading rules on small hand-written files: order, crowd, invalid polygons, empty
// images, area fallback, RLE forms.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "detkit/data/coco/coco.h"
#include "detkit/data/training_targets.h"
#include "detkit/utils/error.h"
#include "tests/data/coco_test_files.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

using testing::coco_annotation;
using testing::coco_image;
using testing::coco_json;
using testing::kTwoCategories;

// Captures what spdlog's default logger prints while alive.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() const { return stream_.str(); }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> previous_;
};

class CocoSemanticsTest : public ::testing::Test {
 protected:
  CocoDataset load(const std::string& text, const CocoLoadOptions& options = {}) {
    return load_coco_json(dir_.write("instances.json", text), dir_.path("images"), options);
  }
  testing::TempDir dir_{"coco_semantics"};
};

TEST_F(CocoSemanticsTest, ImagesSortedByIdAnnotationsByImageInFileOrder) {
  // Categories and annotations before images, ids out of order: the order is still Detectron2's.
  std::string text = "{\"categories\": [" + std::string(kTwoCategories) + "], \"annotations\": [" +
                     coco_annotation(30, 9, 1) + ", " + coco_annotation(10, 2, 3) + ", " +
                     coco_annotation(20, 9, 3) + ", " + coco_annotation(5, 2, 1) +
                     "], \"images\": [" + coco_image(9, "nine.jpg") + ", " +
                     coco_image(2, "two.jpg") + ", " + coco_image(4, "four.jpg") + "]}";
  CocoDataset ds = load(text);
  ASSERT_EQ(ds.num_images(), 3u);
  EXPECT_EQ(ds.image(0).id, 2);
  EXPECT_EQ(ds.image(0).file_name, "two.jpg");
  EXPECT_EQ(ds.image(1).id, 4);
  EXPECT_EQ(ds.image(2).id, 9);
  auto ids = [&](size_t i) {
    std::vector<int64_t> out;
    for (AnnotationView a : ds.annotations_of(i)) out.push_back(a.id());
    return out;
  };
  EXPECT_EQ(ids(0), (std::vector<int64_t>{10, 5}));
  EXPECT_TRUE(ids(1).empty());
  EXPECT_EQ(ids(2), (std::vector<int64_t>{30, 20}));
  EXPECT_EQ(ds.annotation(0).class_index(), 1);  // category 3 is the second by id
  EXPECT_EQ(ds.annotation(1).class_index(), 0);
  EXPECT_EQ(ds.image_path(0), dir_.path("images") + "/two.jpg");
}

TEST_F(CocoSemanticsTest, InvalidPolygonsAreDroppedAndCounted) {
  std::string text = coco_json(
      coco_image(1, "a.jpg"),
      // 5: one good polygon and one of 2 points; 6: only a 2-point polygon (dropped entirely);
      // 7: an odd number of coordinates next to a good one; 8: an empty list (box only).
      coco_annotation(5, 1, 1, ", \"segmentation\": [[0, 0, 4, 0, 4, 3], [1, 1, 2, 2]]") + ", " +
          coco_annotation(6, 1, 1, ", \"segmentation\": [[1, 1, 2, 2]]") + ", " +
          coco_annotation(7, 1, 1, ", \"segmentation\": [[0, 0, 4, 0, 4], [0, 0, 2, 0, 2, 2]]") +
          ", " + coco_annotation(8, 1, 1, ", \"segmentation\": []") + ", " +
          coco_annotation(9, 1, 1, ", \"segmentation\": null"),
      kTwoCategories);
  LogCapture log;
  CocoDataset ds = load(text);
  EXPECT_EQ(ds.stats().dropped_polygons, 3u);
  EXPECT_EQ(ds.stats().dropped_annotations, 1u);
  ASSERT_EQ(ds.num_annotations(), 4u);
  EXPECT_EQ(ds.annotation(0).id(), 5);
  EXPECT_EQ(ds.annotation(0).polygons(), (std::vector<std::vector<double>>{{0, 0, 4, 0, 4, 3}}));
  EXPECT_EQ(ds.annotation(1).id(), 7);
  EXPECT_EQ(ds.annotation(1).polygons(), (std::vector<std::vector<double>>{{0, 0, 2, 0, 2, 2}}));
  EXPECT_EQ(ds.annotation(2).segmentation_kind(), SegmentationKind::kNone);
  EXPECT_EQ(ds.annotation(3).segmentation_kind(), SegmentationKind::kNone);
  EXPECT_THROW(ds.annotation(2).mask_rle(), Error);
  EXPECT_NE(log.text().find("dropped 3 polygons with fewer than 3 points"), std::string::npos)
      << log.text();
  EXPECT_NE(log.text().find("filtered out 1 instances without valid segmentation"),
            std::string::npos)
      << log.text();
}

TEST_F(CocoSemanticsTest, CrowdIsKeptFlaggedAndNeverATarget) {
  mask_ops::RLE blob{4, 6, {5, 7, 12}};
  std::string counts = mask_ops::to_string(blob);
  ASSERT_EQ(counts.find('\\'), std::string::npos);  // written into JSON unescaped below
  std::string text = coco_json(
      coco_image(1, "a.jpg", 4, 6),
      coco_annotation(5, 1, 1,
                      ", \"iscrowd\": 1, \"segmentation\": {\"counts\": [2, 3, 19], \"size\": "
                      "[4, 6]}") +
          ", " + coco_annotation(6, 1, 3, ", \"iscrowd\": false, \"area\": 2.5") + ", " +
          coco_annotation(7, 1, 3,
                          ", \"iscrowd\": true, \"segmentation\": {\"counts\": \"" + counts +
                              "\", \"size\": [4, 6]}"),
      kTwoCategories);
  CocoDataset ds = load(text);
  ASSERT_EQ(ds.num_annotations(), 3u);
  EXPECT_EQ(ds.num_crowd(), 2u);
  EXPECT_TRUE(ds.annotation(0).iscrowd());
  EXPECT_FALSE(ds.annotation(1).iscrowd());
  mask_ops::RLE rle = ds.annotation(0).rle();
  EXPECT_EQ(rle.counts, (std::vector<uint32_t>{2, 3, 19}));
  EXPECT_EQ(ds.annotation(0).area(), 3.0);  // no "area": the RLE's pixel count
  EXPECT_EQ(ds.annotation(1).area(), 2.5);
  // A compressed counts string round-trips through mask_ops.
  mask_ops::RLE compressed = ds.annotation(2).rle();
  EXPECT_EQ(compressed.counts, blob.counts);
  EXPECT_EQ(ds.annotation(2).area(), 7.0);
  std::vector<InstanceAnnotation> targets = training_targets(ds, 0);
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].annotation_id, 6);
  EXPECT_EQ(targets[0].class_index, 1);
  EXPECT_EQ(targets[0].box_xyxy, (std::array<double, 4>{1, 1, 3, 3}));
}

TEST_F(CocoSemanticsTest, AreaFallbacksAreDetectron2s) {
  CocoDataset ds = load(coco_json(
      coco_image(1, "a.jpg"),
      coco_annotation(5, 1, 1, ", \"segmentation\": [[0, 0, 4, 0, 4, 3], [0, 0, 2, 0, 0, 2]]") +
          ", " + coco_annotation(6, 1, 1, "", "[1, 1, 2.5, 4]"),
      kTwoCategories));
  EXPECT_EQ(ds.annotation(0).area(), 6.0 + 2.0);  // shoelace areas summed
  EXPECT_EQ(ds.annotation(1).area(), 10.0);       // box area
}

TEST_F(CocoSemanticsTest, FilteringDropsImagesWithoutNonCrowdAnnotations) {
  std::string crowd = ", \"iscrowd\": 1";
  std::string text = coco_json(
      coco_image(1, "a.jpg") + ", " + coco_image(2, "b.jpg") + ", " + coco_image(3, "c.jpg") +
          ", " + coco_image(4, "d.jpg"),
      coco_annotation(5, 1, 1) + ", " + coco_annotation(6, 2, 1, crowd) + ", " +
          coco_annotation(7, 3, 1, crowd) + ", " + coco_annotation(8, 3, 3) + ", " +
          coco_annotation(9, 4, 1, ", \"segmentation\": [[1, 1, 2, 2]]"),  // dropped: no polygon
      kTwoCategories);
  EXPECT_EQ(load(text).num_images(), 4u);
  LogCapture log;
  CocoLoadOptions options;
  options.filter_empty_annotations = true;
  CocoDataset ds = load(text, options);
  EXPECT_EQ(ds.stats().filtered_images, 2u);
  ASSERT_EQ(ds.num_images(), 2u);
  EXPECT_EQ(ds.image(0).id, 1);
  EXPECT_EQ(ds.image(1).id, 3);
  EXPECT_EQ(ds.num_annotations(), 3u);
  EXPECT_EQ(ds.annotations_of(1).size(), 2u);  // the crowd region stays with its image
  EXPECT_TRUE(ds.annotations_of(1)[0].iscrowd());
  EXPECT_EQ(ds.annotations_of(1)[1].id(), 8);
  EXPECT_NE(log.text().find("Removed 2 images with no usable annotations. 2 images left."),
            std::string::npos)
      << log.text();
}

TEST_F(CocoSemanticsTest, UnknownKeysAndEscapesAndOtherTopLevelKeys) {
  std::string text =
      "{\"info\": {\"year\": 2017, \"note\": \"] } [ {\"}, \"licenses\": [{\"id\": 1}], "
      "\"images\": [{\"license\": 1, \"file_name\": \"caf\\u00e9 \\\"q\\\".jpg\", \"coco_url\": "
      "\"x\", \"height\": 4, \"width\": 6, \"id\": 1}], \"annotations\": [{\"segmentation\": "
      "[[0, 0, 4, 0, 4, 3]], \"num_keypoints\": 0, \"keypoints\": [], \"area\": 6.0, "
      "\"iscrowd\": 0, \"image_id\": 1, \"bbox\": [0, 0, 4, 3], \"category_id\": 1, \"id\": 3}], "
      "\"categories\": [{\"supercategory\": \"p\", \"id\": 1, \"name\": \"person\"}], \"type\": "
      "\"instances\"}";
  CocoDataset ds = load(text);
  ASSERT_EQ(ds.num_images(), 1u);
  EXPECT_EQ(ds.image(0).file_name, "caf\xc3\xa9 \"q\".jpg");
  EXPECT_EQ(ds.categories()[0].name, "person");
  EXPECT_EQ(ds.annotation(0).area(), 6.0);
}

TEST_F(CocoSemanticsTest, EmptyArraysGiveAnEmptyDataset) {
  CocoDataset ds = load(coco_json("", "", ""));
  EXPECT_EQ(ds.num_images(), 0u);
  EXPECT_EQ(ds.num_annotations(), 0u);
  EXPECT_EQ(ds.num_classes(), 0u);
  EXPECT_EQ(filter_empty_annotations(ds), 0u);
}

}  // namespace
}  // namespace detkit::data
