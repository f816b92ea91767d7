// Semantic labels through the training mapper (Detectron2's DatasetMapper with
// sem_seg_file_name): equal to what Detectron2's train mapper gave on the Panoptic FPN fixture,
// resized nearest and flipped with the image, dropped in testing, and bad label maps refused by
// name.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/data/coco/coco.h"
#include "detkit/data/dataset_mapper.h"
#include "detkit/data/sem_seg_dataset.h"
#include "tests/data/mapper_test_files.h"
#include "tests/support/error_of.h"

namespace detkit::data {
namespace {

using testing::error_of;
using testing::expect_contains;

const std::string kPanopticFpnFixture =
    std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_panoptic/";

// Training mapper options: resize the short side to `short_side`, then flip when `flip`.
DatasetMapperOptions sem_seg_train_options(int64_t short_side, int64_t max_size, bool flip,
                                           MaskFormat masks = MaskFormat::kNone) {
  DatasetMapperOptions o;
  o.is_train = true;
  o.mask_format = masks;
  o.augmentations = {
      std::make_shared<ResizeShortestEdge>(std::vector<int64_t>{short_side}, max_size)};
  if (flip) o.augmentations.push_back(std::make_shared<RandomFlip>(1.0, true, false));
  return o;
}

TEST(SemanticTarget, EqualsDetectron2sTrainMapperOnThePanopticFixture) {
  if (!std::filesystem::exists(kPanopticFpnFixture + "outputs.pth") || !testing::have_coco_tiny())
    GTEST_SKIP() << "fixture absent: " << kPanopticFpnFixture << "outputs.pth and coco_tiny";
  const auto outputs = checkpoint::load_plain_tensor_dict(kPanopticFpnFixture + "outputs.pth");
  CocoDataset ds =
      load_coco_json(testing::coco_tiny_json("val2017"), testing::coco_tiny_images("val2017"));
  ds.set_sem_seg_root(kPanopticFpnFixture + "sem_seg");
  // config.yaml: INPUT.MIN_SIZE_TRAIN (320,), MAX_SIZE_TRAIN 480, RANDOM_FLIP none.
  const DatasetMapper mapper(sem_seg_train_options(320, 480, /*flip=*/false, MaskFormat::kPolygon));
  const int64_t image_ids[] = {532481, 5001};
  for (int i = 0; i < 2; ++i) {
    const size_t index = ds.find_image(image_ids[i]).value();
    SampleRng rng(0, index);
    const structures::ModelInput input = mapper(ds, index, rng);
    ASSERT_TRUE(input.sem_seg.has_value()) << "image " << i;
    const at::Tensor expected = outputs.at("train_gt_sem_seg_" + std::to_string(i)).to(at::kLong);
    const at::Tensor& got = *input.sem_seg;
    EXPECT_EQ(got.scalar_type(), at::kLong);
    ASSERT_EQ(got.sizes(), expected.sizes()) << "image " << i;
    EXPECT_EQ(got.size(0), input.image.size(1));
    EXPECT_EQ(got.size(1), input.image.size(2));
    const int64_t differing = got.ne(expected).sum().item<int64_t>();
    std::cout << "train_gt_sem_seg_" << i << " " << got.sizes() << ": " << differing
              << " pixels differ from Detectron2's\n";
    EXPECT_EQ(differing, 0) << "image " << i;
    // The image beside it is Detectron2's too, and the instances are still mapped.
    EXPECT_TRUE(
        at::equal(input.image, outputs.at("input_tensor_" + std::to_string(i)).to(at::kFloat)));
    EXPECT_GT(input.instances->size(), 0);
  }
}

// A "_stuffonly" dataset (load_sem_seg: no instances file) maps to the same targets, with no
// instances.
TEST(SemanticTarget, StuffonlyDatasetEqualsDetectron2sTrainMapper) {
  if (!std::filesystem::exists(kPanopticFpnFixture + "outputs.pth") || !testing::have_coco_tiny())
    GTEST_SKIP() << "fixture absent: " << kPanopticFpnFixture << "outputs.pth and coco_tiny";
  const auto outputs = checkpoint::load_plain_tensor_dict(kPanopticFpnFixture + "outputs.pth");
  const CocoDataset ds =
      load_sem_seg(kPanopticFpnFixture + "sem_seg", testing::coco_tiny_images("val2017"));
  ASSERT_EQ(ds.num_images(), 2u);
  const DatasetMapper mapper(sem_seg_train_options(320, 480, /*flip=*/false, MaskFormat::kPolygon));
  // Sorted by stem: 000000005001 is the fixture's image 1, 000000532481 its image 0.
  for (size_t index = 0; index < 2; ++index) {
    const std::string i = std::to_string(1 - index);
    SampleRng rng(0, index);
    const structures::ModelInput input = mapper(ds, index, rng);
    ASSERT_TRUE(input.sem_seg.has_value()) << "image " << i;
    EXPECT_TRUE(at::equal(*input.sem_seg, outputs.at("train_gt_sem_seg_" + i).to(at::kLong)))
        << "image " << i;
    EXPECT_TRUE(at::equal(input.image, outputs.at("input_tensor_" + i).to(at::kFloat)));
    EXPECT_EQ(input.instances->size(), 0);
  }
}

TEST(SemanticTarget, StuffonlyImageOfAnotherSizeThanItsLabelMap) {
  testing::TempDir dir("sem_seg_stuffonly_size");
  testing::write_image(dir, "a.png", testing::gradient_image(4, 6));
  std::filesystem::rename(dir.path("images/a.png"), dir.path("images/a.jpg"));
  cv::imwrite(dir.write("labels/a.png", ""), cv::Mat(5, 6, CV_8UC1, cv::Scalar(1)));
  const CocoDataset ds = load_sem_seg(dir.path("labels"), dir.path("images"));
  const DatasetMapper mapper(sem_seg_train_options(4, 100, /*flip=*/false));
  SampleRng rng(0, 0);
  expect_contains(error_of([&] { mapper(ds, 0, rng); }),
                  "decoded image is 6x4 (width x height) but its label map " + dir.path("labels") +
                      "/a.png says 6x5");
}

// A (4, 6) label map whose pixel (y, x) is 10 y + x, beside a gradient image of the same size.
CocoDataset sem_seg_dataset(const testing::TempDir& dir, const cv::Mat& labels, int height = 4,
                            int width = 6) {
  testing::write_image(dir, "a.png", testing::gradient_image(height, width));
  if (!labels.empty()) cv::imwrite(dir.write("labels/a.png", ""), labels);
  CocoDataset ds = testing::write_and_load(dir, testing::coco_image(1, "a.png", height, width),
                                           testing::coco_annotation(1, 1, 1));
  ds.set_sem_seg_root(dir.path("labels"));
  return ds;
}

cv::Mat numbered_labels(int height = 4, int width = 6) {
  cv::Mat labels(height, width, CV_8UC1);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) labels.at<uchar>(y, x) = static_cast<uchar>(10 * y + x);
  return labels;
}

TEST(SemanticTarget, ResizedNearestThenFlippedWithTheImage) {
  testing::TempDir dir("sem_seg_flip");
  const CocoDataset ds = sem_seg_dataset(dir, numbered_labels());
  SampleRng rng(0, 0);
  const structures::ModelInput input =
      DatasetMapper(sem_seg_train_options(8, 1000, /*flip=*/true))(ds, 0, rng);
  ASSERT_TRUE(input.sem_seg.has_value());
  ASSERT_EQ(input.sem_seg->sizes(), (std::vector<int64_t>{8, 12}));
  // Twice the size, nearest: pixel (y, x) of the resized map is (y / 2, x / 2) of the original;
  // flipped: x becomes 11 - x.
  const auto got = input.sem_seg->accessor<int64_t, 2>();
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 12; ++x) EXPECT_EQ(got[y][x], 10 * (y / 2) + (11 - x) / 2) << y << "," << x;
}

TEST(SemanticTarget, DownscaledLikePilsNearest) {
  // 4x6 -> 2x3: PIL's NEAREST samples each output pixel's centre, source (2 y + 1, 2 x + 1).
  testing::TempDir dir("sem_seg_down");
  const CocoDataset ds = sem_seg_dataset(dir, numbered_labels());
  SampleRng rng(0, 0);
  const structures::ModelInput input =
      DatasetMapper(sem_seg_train_options(2, 1000, /*flip=*/false))(ds, 0, rng);
  const at::Tensor expected = at::tensor({11, 13, 15, 31, 33, 35}, at::kLong).reshape({2, 3});
  EXPECT_TRUE(at::equal(*input.sem_seg, expected)) << *input.sem_seg;
}

TEST(SemanticTarget, ColourLabelMapsAreConvertedAsPilsModeL) {
  testing::TempDir dir("sem_seg_colour");
  cv::Mat grey_as_colour;
  cv::cvtColor(numbered_labels(), grey_as_colour, cv::COLOR_GRAY2BGR);
  grey_as_colour.at<cv::Vec3b>(0, 0) = cv::Vec3b(30, 20, 10);  // B, G, R: PIL L = 19
  const CocoDataset ds = sem_seg_dataset(dir, grey_as_colour);
  SampleRng rng(0, 0);
  const structures::ModelInput input =
      DatasetMapper(sem_seg_train_options(4, 1000, /*flip=*/false))(ds, 0, rng);
  at::Tensor expected =
      at::arange(6, at::kLong).repeat({4, 1}) + 10 * at::arange(4, at::kLong).unsqueeze(1);
  expected[0][0] = (10 * 19595 + 20 * 38470 + 30 * 7471 + 0x8000) >> 16;
  EXPECT_TRUE(at::equal(*input.sem_seg, expected)) << *input.sem_seg;
}

TEST(SemanticTarget, TestingDropsIt) {
  testing::TempDir dir("sem_seg_test_mode");
  const CocoDataset ds = sem_seg_dataset(dir, numbered_labels());
  DatasetMapperOptions o = sem_seg_train_options(8, 1000, false);
  o.is_train = false;
  SampleRng rng(0, 0);
  EXPECT_FALSE(DatasetMapper(o)(ds, 0, rng).sem_seg.has_value());
  // And a dataset without label maps gives none in training.
  CocoDataset plain = ds;
  plain.set_sem_seg_root("");
  EXPECT_FALSE(DatasetMapper(sem_seg_train_options(8, 1000, false))(plain, 0, rng).sem_seg);
}

// The message the training mapper gives for image 0 of `ds`.
std::string sem_seg_error(const CocoDataset& ds) {
  return error_of([&] {
    SampleRng rng(0, 0);
    DatasetMapper(sem_seg_train_options(8, 1000, false))(ds, 0, rng);
  });
}

TEST(SemanticTarget, BadLabelMapsAreNamedErrors) {
  testing::TempDir dir("sem_seg_errors");
  CocoDataset ds = sem_seg_dataset(dir, cv::Mat());
  const std::string png = dir.path("labels/a.png");
  std::string message = sem_seg_error(ds);  // missing
  expect_contains(message, png + ": image file not found");
  expect_contains(message, "image id 1");

  dir.write("labels/a.png", "");  // the folder
  cv::imwrite(png, numbered_labels(3, 6));
  message = sem_seg_error(ds);  // another size than the image's
  expect_contains(message, png + ": the semantic label map is 6x3 (width x height) but its image " +
                               dir.path("images/a.png") + " is 6x4");

  dir.write("labels/a.png", "not a PNG at all");
  expect_contains(sem_seg_error(ds), png + ": not a readable label map");

  cv::imwrite(png, cv::Mat(4, 6, CV_16UC1, cv::Scalar(300)));
  expect_contains(sem_seg_error(ds), png + ": a label map must have 8 bits per channel");
}

}  // namespace
}  // namespace detkit::data
