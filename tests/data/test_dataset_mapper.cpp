// DatasetMapper on a small dataset written to disk: the image, Detectron2's exact box
// arithmetic, polygons, crowd and empty instances, test-time mapping, mask formats.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include "detkit/config/defaults.h"
#include "detkit/data/dataset_mapper.h"
#include "detkit/utils/error.h"
#include "tests/data/mapper_test_files.h"

namespace detkit::data {
namespace {

using testing::coco_annotation;
using testing::coco_image;

// One 640x480 image (class index 0 is category 1 "person", 1 is category 3 "car"):
//   10: person, a box where Detectron2's float32 conversion matters, one triangle;
//   11: car, sticking out at the bottom right;
//   12: crowd;
//   13: entirely right of the image: empty after clipping.
struct MapperFixture : ::testing::Test {
  testing::TempDir dir{"dataset_mapper"};
  CocoDataset dataset;
  void SetUp() override {
    testing::write_image(dir, "a.png", testing::gradient_image(480, 640));
    dataset = testing::write_and_load(
        dir, coco_image(1, "a.png", 480, 640),
        coco_annotation(10, 1, 1,
                        ", \"segmentation\": [[306.76, 100.5, 428.84, 100.5, 428.84, 150.75]]",
                        "[306.76, 100.5, 122.08, 50.25]") +
            ", " +
            coco_annotation(11, 1, 3,
                            ", \"segmentation\": [[600.5, 470.25, 640, 470.25, 640, 480]]",
                            "[600.5, 470.25, 80.0, 20.0]") +
            ", " + coco_annotation(12, 1, 3, ", \"iscrowd\": 1", "[0, 0, 50, 50]") + ", " +
            coco_annotation(13, 1, 1, ", \"segmentation\": [[700, 10, 705, 10, 705, 15]]",
                            "[700, 10, 5, 5]"));
  }
  DatasetMapperOptions options(bool flip, MaskFormat masks = MaskFormat::kPolygon) {
    DatasetMapperOptions o;
    o.augmentations = {std::make_shared<ResizeShortestEdge>(std::vector<int64_t>{800}, 1333)};
    if (flip) o.augmentations.push_back(std::make_shared<RandomFlip>(1.0, true, false));
    o.mask_format = masks;
    return o;
  }
};

std::vector<float> row(const at::Tensor& boxes, int64_t i) {
  at::Tensor r = boxes[i].contiguous();
  return std::vector<float>(r.data_ptr<float>(), r.data_ptr<float>() + 4);
}

TEST(CocoBbox, ConvertsThroughFloat32AsDetectron2) {
  // 306.76 + 122.08 is 428.84000000000003 in float64 but f32(306.76) + f32(122.08) rounds to
  // 428.84002685546875 in float32.
  auto xyxy = coco_bbox_to_xyxy({306.76, 100.5, 122.08, 50.25});
  EXPECT_EQ(xyxy[0], static_cast<double>(306.76f));
  EXPECT_EQ(xyxy[2], 428.84002685546875);
  EXPECT_NE(static_cast<float>(306.76 + 122.08), static_cast<float>(xyxy[2]));
  EXPECT_EQ(xyxy[3], 150.75);
}

TEST_F(MapperFixture, TrainingTargetsMatchDetectron2Exactly) {
  DatasetMapper mapper(options(false));
  SampleRng rng(0, 0);
  structures::ModelInput input = mapper(dataset, 0, rng);
  EXPECT_EQ(input.image.sizes(), (at::IntArrayRef{3, 800, 1067}));
  EXPECT_EQ(input.height, 480);
  EXPECT_EQ(input.width, 640);
  ASSERT_TRUE(input.instances.has_value());
  const auto& inst = *input.instances;
  EXPECT_EQ(inst.image_height(), 800);
  EXPECT_EQ(inst.image_width(), 1067);
  ASSERT_EQ(inst.size(), 2);  // crowd 12 dropped, empty 13 removed
  const at::Tensor& boxes = inst.boxes("gt_boxes").tensor();
  EXPECT_EQ(boxes.scalar_type(), at::kFloat);
  // Detectron2's result, float32 (with float64 conversion x1 would be 714.9566650390625).
  EXPECT_EQ(row(boxes, 0),
            (std::vector<float>{511.42645263671875f, 167.5f, 714.9567260742188f, 251.25f}));
  EXPECT_EQ(row(boxes, 1), (std::vector<float>{1001.1461181640625f, 783.75f, 1067.f, 800.f}));
  at::Tensor classes = inst.tensor("gt_classes");
  EXPECT_EQ(classes.scalar_type(), at::kLong);
  EXPECT_EQ(classes[0].item<int64_t>(), 0);
  EXPECT_EQ(classes[1].item<int64_t>(), 1);
  const auto& polygons = inst.polygon_masks("gt_masks").polygons();
  ASSERT_EQ(polygons.size(), 2u);
  const double sx = 1067.0 / 640, sy = 800.0 / 480;
  EXPECT_EQ(polygons[1][0], (std::vector<double>{600.5 * sx, 470.25 * sy, 640 * sx, 470.25 * sy,
                                                 640 * sx, 480 * sy}));
}

TEST_F(MapperFixture, FlipAppliesToImageBoxesAndPolygons) {
  SampleRng rng_a(0, 0), rng_b(0, 0);
  structures::ModelInput plain = DatasetMapper(options(false))(dataset, 0, rng_a);
  structures::ModelInput flipped = DatasetMapper(options(true))(dataset, 0, rng_b);
  EXPECT_TRUE(at::equal(flipped.image, plain.image.flip({2})));
  const at::Tensor& boxes = flipped.instances->boxes("gt_boxes").tensor();
  EXPECT_EQ(row(boxes, 0),
            (std::vector<float>{352.04327392578125f, 167.5f, 555.5735473632812f, 251.25f}));
  EXPECT_EQ(row(boxes, 1), (std::vector<float>{0.f, 783.75f, 65.8539047241211f, 800.f}));
  const auto& polygon = flipped.instances->polygon_masks("gt_masks").polygons()[1][0];
  EXPECT_DOUBLE_EQ(polygon[0], 65.85390625000002);  // 1067 - 600.5 * (1067 / 640)
  EXPECT_EQ(polygon[2], 0.0);
}

TEST_F(MapperFixture, ImageChannelsFollowTheFormat) {
  DatasetMapperOptions bgr;  // no augmentation: the file's pixels
  DatasetMapperOptions rgb;
  rgb.image_format = "RGB";
  SampleRng rng(0, 0);
  structures::ModelInput a = DatasetMapper(bgr)(dataset, 0, rng);
  structures::ModelInput b = DatasetMapper(rgb)(dataset, 0, rng);
  // gradient_image: channel 0 (blue) is x % 256, channel 1 (green) is y % 256.
  EXPECT_EQ(a.image.index({0, 10, 300}).item<float>(), 300 % 256);
  EXPECT_EQ(a.image.index({1, 10, 300}).item<float>(), 10);
  EXPECT_TRUE(at::equal(b.image, a.image.flip({0})));
}

TEST_F(MapperFixture, TestTimeMappingResizesOnlyAndKeepsOriginalSize) {
  DatasetMapperOptions o = options(false);
  o.is_train = false;
  SampleRng rng(0, 0);
  structures::ModelInput input = DatasetMapper(o)(dataset, 0, rng);
  EXPECT_FALSE(input.instances.has_value());
  EXPECT_EQ(input.image.sizes(), (at::IntArrayRef{3, 800, 1067}));
  EXPECT_EQ(input.height, 480);
  EXPECT_EQ(input.width, 640);
}

TEST_F(MapperFixture, BitmaskFormatRasterisesTransformedPolygons) {
  SampleRng rng(0, 0);
  structures::ModelInput input = DatasetMapper(options(false, MaskFormat::kBitmask))(dataset, 0, rng);
  const auto& masks = input.instances->bit_masks("gt_masks");
  EXPECT_EQ(masks.tensor().sizes(), (at::IntArrayRef{2, 800, 1067}));
  // The triangle of instance 1 covers pixels near the image's bottom-right corner.
  EXPECT_TRUE(masks.tensor().index({1, 795, 1060}).item<bool>());
  EXPECT_FALSE(masks.tensor().index({1, 700, 500}).item<bool>());
}

TEST_F(MapperFixture, NoMasksWithoutMaskOn) {
  SampleRng rng(0, 0);
  structures::ModelInput input = DatasetMapper(options(false, MaskFormat::kNone))(dataset, 0, rng);
  EXPECT_FALSE(input.instances->has("gt_masks"));
  EXPECT_EQ(input.instances->size(), 2);
}

TEST(ImageToTensor, ChannelsFirstFloatOfEveryByte) {
  // Every byte value, a width that is no multiple of a vector, and a non-continuous view (a
  // column range of a wider image): the (3, H, W) float tensor of the (H, W, 3) bytes.
  cv::Mat wide(5, 107, CV_8UC3);
  for (int i = 0; i < wide.rows * wide.cols * 3; ++i) wide.data[i] = static_cast<uint8_t>(i * 7);
  for (const cv::Mat& image : {wide, wide.colRange(3, 90)}) {
    cv::Mat continuous = image.clone();
    const at::Tensor expected =
        at::from_blob(continuous.data, {continuous.rows, continuous.cols, 3}, at::kByte)
            .permute({2, 0, 1})
            .to(at::kFloat);
    const at::Tensor got = image_to_tensor(image);
    EXPECT_TRUE(got.is_contiguous());
    EXPECT_TRUE(got.equal(expected))
        << image.cols << " columns, continuous " << image.isContinuous();
  }
}

TEST(DatasetMapperConfig, ReadsFormatAndMasks) {
  config::CfgNode cfg = config::get_cfg();
  cfg.set("MODEL.MASK_ON", true);
  cfg.set("INPUT.MASK_FORMAT", "bitmask");
  DatasetMapperOptions o = dataset_mapper_options_from_config(cfg, true);
  EXPECT_EQ(o.mask_format, MaskFormat::kBitmask);
  EXPECT_EQ(o.augmentations.size(), 2u);
  cfg.set("INPUT.FORMAT", "YUV");
  EXPECT_THROW(dataset_mapper_options_from_config(cfg, true), Error);
}

}  // namespace
}  // namespace detkit::data
