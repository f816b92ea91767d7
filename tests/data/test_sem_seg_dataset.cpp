// load_sem_seg and the "_stuffonly" datasets (Detectron2's register_coco_panoptic_separated also
// registers name + "_stuffonly"): images paired with label maps by stem, none dropped for having
// no instances, with the metadata of semantic segmentation.
#include <gtest/gtest.h>

#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>

#include "detkit/data/catalog.h"
#include "detkit/data/detection_dataset.h"
#include "detkit/data/metadata.h"
#include "detkit/data/sem_seg_dataset.h"
#include "tests/data/coco_test_files.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

using testing::error_of;
using testing::expect_contains;
using testing::TempDir;

// images/{a,b,c}.jpg (not decoded by the loader: any bytes) and labels/{a,b,d}.png of the given
// sizes, plus files of other extensions that are not part of the dataset.
void write_stuffonly_folders(const TempDir& dir) {
  for (const char* image : {"a.jpg", "b.jpg", "c.jpg"})
    dir.write(std::string("images/") + image, "x");
  dir.write("images/notes.txt", "x");
  std::filesystem::create_directories(dir.path("labels"));
  ASSERT_TRUE(cv::imwrite(dir.path("labels/a.png"), cv::Mat(5, 7, CV_8UC1, cv::Scalar(1))));
  ASSERT_TRUE(cv::imwrite(dir.path("labels/b.png"), cv::Mat(9, 3, CV_8UC1, cv::Scalar(255))));
  ASSERT_TRUE(cv::imwrite(dir.path("labels/d.png"), cv::Mat(2, 2, CV_8UC1, cv::Scalar(0))));
  dir.write("labels/a.jpg", "x");
}

TEST(SemSegDataset, ImagesPairedWithLabelMapsByStem) {
  TempDir dir("sem_seg_pairs");
  write_stuffonly_folders(dir);
  const CocoDataset ds = load_sem_seg(dir.path("labels"), dir.path("images"));
  ASSERT_EQ(ds.num_images(), 2u);  // c.jpg has no label map, d.png no image
  EXPECT_EQ(ds.image(0).file_name, "a.jpg");
  EXPECT_EQ(ds.image(0).id, 0);
  EXPECT_EQ(ds.image(0).width, 7);
  EXPECT_EQ(ds.image(0).height, 5);
  EXPECT_EQ(ds.image(1).file_name, "b.jpg");
  EXPECT_EQ(ds.image(1).id, 1);
  EXPECT_EQ(ds.image(1).width, 3);
  EXPECT_EQ(ds.image(1).height, 9);
  EXPECT_EQ(ds.image_path(1), dir.path("images") + "/b.jpg");
  EXPECT_EQ(ds.sem_seg_path(1).value(), dir.path("labels") + "/b.png");
  EXPECT_EQ(ds.num_annotations(), 0u);
  EXPECT_EQ(ds.num_classes(), 0u);
  EXPECT_TRUE(ds.annotations_of(0).empty());
}

TEST(SemSegDataset, BadFoldersNamed) {
  TempDir dir("sem_seg_bad");
  write_stuffonly_folders(dir);
  expect_contains(error_of([&] { load_sem_seg(dir.path("missing"), dir.path("images")); }),
                  "the label map folder '" + dir.path("missing") + "' does not exist");
  expect_contains(error_of([&] { load_sem_seg(dir.path("labels"), dir.path("nope")); }),
                  "the image folder '" + dir.path("nope") + "' does not exist");
  expect_contains(error_of([&] { load_sem_seg(dir.path("images"), dir.path("images")); }),
                  "no annotations found in " + dir.path("images"));
  std::filesystem::create_directories(dir.path("other"));
  ASSERT_TRUE(cv::imwrite(dir.path("other/z.png"), cv::Mat(2, 2, CV_8UC1, cv::Scalar(0))));
  expect_contains(error_of([&] { load_sem_seg(dir.path("other"), dir.path("images")); }),
                  "has a label map of the same stem");
  dir.write("labels/c.png", "not a png at all");
  expect_contains(error_of([&] { load_sem_seg(dir.path("labels"), dir.path("images")); }),
                  dir.path("labels") + "/c.png: not a PNG label map");
}

TEST(SemSegDataset, BuiltinStuffonlyNames) {
  const DatasetCatalog catalog;
  const std::string root = "/data/sets";
  for (const std::string split : {"train2017", "val2017", "val2017_100"}) {
    const std::string prefix = split == "train2017" ? "coco_2017_train"
                               : split == "val2017" ? "coco_2017_val"
                                                    : "coco_2017_val_100";
    const DatasetFiles files = catalog.get(prefix + "_panoptic_stuffonly", root);
    EXPECT_EQ(files.kind, DatasetKind::kSemSeg);
    EXPECT_EQ(files.json_file, "");
    EXPECT_EQ(files.image_root, catalog.get(prefix, root).image_root);
    EXPECT_EQ(files.sem_seg_root, root + "/coco/panoptic_stuff_" + split);
  }
  const Metadata& m = global_metadata().get("coco_2017_val_100_panoptic_stuffonly");
  EXPECT_EQ(m.evaluator_type, "sem_seg");
  EXPECT_EQ(m.ignore_label, 255);
  EXPECT_EQ(m.thing_classes.size(), 80u);
  ASSERT_EQ(m.stuff_classes.size(), 54u);
  EXPECT_EQ(m.stuff_classes[0], "things");
  EXPECT_EQ(m.stuff_classes[40], "sky");
  EXPECT_EQ(m.sem_seg_root, DatasetCatalog::datasets_root() + "/coco/panoptic_stuff_val2017_100");
  EXPECT_EQ(m.image_root, DatasetCatalog::datasets_root() + "/coco/val2017");
  EXPECT_EQ(m.json_file, "");
}

TEST(SemSegDataset, UserStuffonlyKeepsImagesWithoutInstances) {
  TempDir dir("sem_seg_user");
  write_stuffonly_folders(dir);
  dir.write("instances.json",
            testing::coco_json(testing::coco_image(1, "a.jpg", 5, 7), "", testing::kTwoCategories));
  dir.write("panoptic.json", R"({"images": [], "annotations": [], "categories": [
      {"id": 1, "name": "person", "isthing": 1}, {"id": 9, "name": "sea", "isthing": 0},
      {"id": 4, "name": "grass", "isthing": 0}]})");
  register_coco_panoptic_separated("stuffonly_test", dir.path("images"), dir.path("pan"),
                                   dir.path("panoptic.json"), dir.path("labels"),
                                   dir.path("instances.json"));
  CocoLoadOptions train;  // training's filters: images without instances would go
  train.filter_empty_annotations = true;
  train.min_keypoints_per_image = 1;
  const DetectionDataset dataset = get_detection_dataset({"stuffonly_test_stuffonly"}, train);
  EXPECT_EQ(dataset.size(), 2u);
  // The separated twin goes through the instances loader and its filter.
  EXPECT_EQ(load_dataset("stuffonly_test_separated", train).num_images(), 0u);
  const Metadata& m = global_metadata().get("stuffonly_test_stuffonly");
  EXPECT_EQ(m.evaluator_type, "sem_seg");
  EXPECT_EQ(m.ignore_label, 255);
  EXPECT_EQ(m.sem_seg_root, dir.path("labels"));
  EXPECT_EQ(m.image_root, dir.path("images"));
  EXPECT_EQ(m.stuff_classes, (std::vector<std::string>{"things", "grass", "sea"}));
  EXPECT_EQ(m.stuff_dataset_ids, (std::vector<int64_t>{0, 4, 9}));
  // Both names are taken together: registering the base name again fails and adds neither.
  expect_contains(error_of([&] {
                    register_coco_panoptic_separated("stuffonly_test", "i", "p", "p.json", "s",
                                                     "j.json");
                  }),
                  "dataset 'stuffonly_test_separated' is already registered");
}

TEST(SemSegDataset, Detectron2FixtureLabelMapsPairWithCocoTiny) {
  const std::string labels =
      std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_panoptic/sem_seg";
  if (!std::filesystem::is_directory(labels) || !testing::have_coco_tiny())
    GTEST_SKIP() << "the shared fixtures are absent: expected " << labels << " and coco_tiny";
  const CocoDataset ds = load_sem_seg(labels, testing::coco_tiny_images("val2017"));
  ASSERT_EQ(ds.num_images(), 2u);
  EXPECT_EQ(ds.image(0).file_name, "000000005001.jpg");
  EXPECT_EQ(ds.image(0).height, 480);
  EXPECT_EQ(ds.image(0).width, 640);
  EXPECT_EQ(ds.image(1).file_name, "000000532481.jpg");
  EXPECT_EQ(ds.image(1).height, 426);
  EXPECT_EQ(ds.image(1).width, 640);
}

}  // namespace
}  // namespace detkit::data
