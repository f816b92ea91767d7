// ResizeShortestEdge, RandomFlip and the transforms: Detectron2's rounding and geometry, checked
// against numbers worked out by hand.
#include <gtest/gtest.h>

#include <set>

#include "detkit/config/defaults.h"
#include "detkit/data/transforms/augmentation.h"
#include "detkit/data/transforms/pil_resize.h"
#include "detkit/data/transforms/sample_rng.h"
#include "detkit/data/transforms/transform.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

using Shape = std::pair<int, int>;

TEST(ResizeShortestEdge, OutputShapeFollowsDetectron2Rounding) {
  // 480x640 to short side 800: scale 5/3, long side 1066.67 -> int(1067.17) = 1067.
  EXPECT_EQ(ResizeShortestEdge::get_output_shape(480, 640, 800, 1333), Shape(800, 1067));
  EXPECT_EQ(ResizeShortestEdge::get_output_shape(640, 480, 800, 1333), Shape(1067, 800));
  // 427x640: 800 / 427 * 640 = 1199.06 -> 1199.
  EXPECT_EQ(ResizeShortestEdge::get_output_shape(427, 640, 800, 1333), Shape(800, 1199));
  // A square keeps the short side exactly.
  EXPECT_EQ(ResizeShortestEdge::get_output_shape(500, 500, 640, 1333), Shape(640, 640));
  // Exactly half a pixel rounds up: 2x3 to short side 3 gives a long side of 4.5 -> 5.
  EXPECT_EQ(ResizeShortestEdge::get_output_shape(2, 3, 3, 1333), Shape(3, 5));
}

TEST(ResizeShortestEdge, LongSideCappedAtMaxSize) {
  // 200x1000 to 800 would be 800x4000: both scaled by 1333 / 4000, 800 * 0.33325 = 266.6 -> 267.
  EXPECT_EQ(ResizeShortestEdge::get_output_shape(200, 1000, 800, 1333), Shape(267, 1333));
  // Tall: 1000x200 -> 1333x267.
  EXPECT_EQ(ResizeShortestEdge::get_output_shape(1000, 200, 800, 1333), Shape(1333, 267));
}

TEST(ResizeShortestEdge, ChoiceAndRangeDrawFromTheirSets) {
  ResizeShortestEdge choice({640, 672, 704}, 1333);
  ResizeShortestEdge range({100, 103}, 1333, ResizeShortestEdge::SampleStyle::kRange);
  std::set<int> choice_sides, range_sides;
  for (uint64_t p = 0; p < 200; ++p) {
    SampleRng rng(5, p);
    auto t = choice.get_transform(480, 640, rng);
    choice_sides.insert(dynamic_cast<const ResizeTransform&>(*t).new_height());
    auto r = range.get_transform(480, 640, rng);
    range_sides.insert(dynamic_cast<const ResizeTransform&>(*r).new_height());
  }
  EXPECT_EQ(choice_sides, (std::set<int>{640, 672, 704}));
  EXPECT_EQ(range_sides, (std::set<int>{100, 101, 102, 103}));
  EXPECT_THROW(ResizeShortestEdge({100}, 1333, ResizeShortestEdge::SampleStyle::kRange), Error);
}

TEST(ResizeShortestEdge, ZeroLengthLeavesTheImage) {
  SampleRng rng(1, 0);
  auto t = ResizeShortestEdge({0}, 1333).get_transform(480, 640, rng);
  EXPECT_NE(dynamic_cast<const NoOpTransform*>(t.get()), nullptr);
}

TEST(Transforms, ResizeScalesCoordinatesByTheSizeRatio) {
  ResizeTransform resize(480, 640, 800, 1067);
  std::vector<double> xy = {640, 480, 320, 240};
  resize.apply_coords(xy.data(), 2);
  EXPECT_DOUBLE_EQ(xy[0], 640 * (1067.0 / 640));
  EXPECT_DOUBLE_EQ(xy[1], 800);
  EXPECT_DOUBLE_EQ(xy[2], 320 * (1067.0 / 640));
  EXPECT_DOUBLE_EQ(xy[3], 400);
}

TEST(Transforms, FlipsMirrorBoxesAndPolygons) {
  HFlipTransform hflip(100);
  auto box = hflip.apply_box({10, 20, 30, 40});
  EXPECT_EQ(box, (std::array<double, 4>{70, 20, 90, 40}));
  VFlipTransform vflip(50);
  EXPECT_EQ(vflip.apply_box({10, 20, 30, 40}), (std::array<double, 4>{10, 10, 30, 30}));

  TransformList list;
  list.push_back(std::make_shared<ResizeTransform>(50, 100, 100, 200));  // x2 both ways
  list.push_back(std::make_shared<HFlipTransform>(200));
  EXPECT_EQ(list.apply_polygon({10, 5, 20, 5, 20, 15}),
            (std::vector<double>{180, 10, 160, 10, 160, 30}));
  EXPECT_EQ(list.apply_box({10, 5, 20, 15}), (std::array<double, 4>{160, 10, 180, 30}));
}

TEST(Transforms, ImagesResizeAndFlip) {
  cv::Mat image(2, 3, CV_8UC1);
  for (int i = 0; i < 6; ++i)
    image.data[i] = static_cast<uchar>(i * 10);  // rows 0 10 20 / 30 40 50
  cv::Mat flipped = HFlipTransform(3).apply_image(image);
  EXPECT_EQ(flipped.at<uchar>(0, 0), 20);
  EXPECT_EQ(flipped.at<uchar>(1, 2), 30);
  cv::Mat vflipped = VFlipTransform(2).apply_image(image);
  EXPECT_EQ(vflipped.at<uchar>(0, 0), 30);
  cv::Mat resized = ResizeTransform(2, 3, 4, 6).apply_image(image);
  EXPECT_EQ(resized.rows, 4);
  EXPECT_EQ(resized.cols, 6);
  // PIL bilinear, x first: output column 0 takes input column 0 alone (the other weight falls
  // outside), so (0, 0) is 0. Output (1, 1): row 0 gives 0.75 * 0 + 0.25 * 10 = 2.5, rounded to
  // 3 in the uint8 intermediate; row 1 gives 0.75 * 30 + 0.25 * 40 = 32.5 -> 33; then
  // 0.75 * 3 + 0.25 * 33 = 10.5 -> 11 (OpenCV's INTER_LINEAR, without the rounding, gives 10).
  EXPECT_EQ(resized.at<uchar>(0, 0), 0);
  EXPECT_EQ(resized.at<uchar>(1, 1), 11);
  EXPECT_THROW(ResizeTransform(3, 3, 4, 6).apply_image(image), Error);
}

// Checksums of PIL 9.4's Image.fromarray(a).resize((w, h), Image.BILINEAR) for the 9x13 RGB
// image a[y, x, c] = (37y + 11x + 71c + (5xy mod 13)) mod 256: the sum of the output bytes and
// the sum of byte * (1 + its flat index), and pixel (1, 2).
TEST(PilBilinearResize, MatchesPillowExactly) {
  cv::Mat image(9, 13, CV_8UC3);
  for (int y = 0; y < 9; ++y) {
    for (int x = 0; x < 13; ++x) {
      for (int c = 0; c < 3; ++c) {
        image.at<cv::Vec3b>(y, x)[c] =
            static_cast<uchar>((y * 37 + x * 11 + c * 71 + (x * y * 5) % 13) % 256);
      }
    }
  }
  struct Case {
    int w, h;
    int64_t sum, weighted;
    cv::Vec3b pixel;
  };
  for (const Case& k :
       {Case{5, 4, 7667, 233885, {174, 114, 78}}, Case{20, 14, 107243, 45226392, {32, 103, 174}},
        Case{13, 5, 24918, 2445739, {107, 178, 169}}, Case{7, 9, 24124, 2301689, {89, 160, 231}}}) {
    cv::Mat out = pil_bilinear_resize(image, k.h, k.w);
    ASSERT_EQ(out.size(), cv::Size(k.w, k.h));
    int64_t sum = 0, weighted = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(out.total() * 3); ++i) {
      sum += out.data[i];
      weighted += out.data[i] * (i + 1);
    }
    EXPECT_EQ(sum, k.sum) << k.w << "x" << k.h;
    EXPECT_EQ(weighted, k.weighted) << k.w << "x" << k.h;
    EXPECT_EQ(out.at<cv::Vec3b>(1, 2), k.pixel) << k.w << "x" << k.h;
  }
}

TEST(RandomFlip, ProbabilityOneAlwaysFlipsZeroNever) {
  RandomFlip always(1.0, true, false), never(0.0, true, false);
  for (uint64_t p = 0; p < 20; ++p) {
    SampleRng rng(3, p);
    EXPECT_NE(dynamic_cast<const HFlipTransform*>(always.get_transform(4, 6, rng).get()), nullptr);
    EXPECT_NE(dynamic_cast<const NoOpTransform*>(never.get_transform(4, 6, rng).get()), nullptr);
  }
  EXPECT_THROW(RandomFlip(0.5, true, true), Error);
}

TEST(RandomFlip, HalfProbabilityFlipsSomeAndNotOthers) {
  RandomFlip half(0.5, false, true);
  int flips = 0;
  for (uint64_t p = 0; p < 100; ++p) {
    SampleRng rng(3, p);
    flips += dynamic_cast<const VFlipTransform*>(half.get_transform(4, 6, rng).get()) != nullptr;
  }
  EXPECT_GT(flips, 0);
  EXPECT_LT(flips, 100);
}

TEST(SampleRng, DependsOnlyOnSeedAndPosition) {
  SampleRng a(7, 11), b(7, 11), c(7, 12), d(8, 11);
  const uint64_t first = a.next_u64();
  EXPECT_EQ(first, b.next_u64());
  EXPECT_NE(first, c.next_u64());
  EXPECT_NE(first, d.next_u64());
  for (int i = 0; i < 1000; ++i) {
    const double u = a.uniform();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    const int64_t k = a.randint(-2, 2);
    EXPECT_GE(k, -2);
    EXPECT_LE(k, 2);
  }
  EXPECT_THROW(a.randint(3, 2), Error);
}

TEST(BuildAugmentation, FollowsTheConfig) {
  config::CfgNode cfg = config::get_cfg();  // MIN_SIZE_TRAIN (800,), RANDOM_FLIP horizontal
  EXPECT_EQ(build_augmentation(cfg, true).size(), 2u);
  EXPECT_EQ(build_augmentation(cfg, false).size(), 1u);
  cfg.set("INPUT.RANDOM_FLIP", "none");
  EXPECT_EQ(build_augmentation(cfg, true).size(), 1u);
  cfg.set("INPUT.RANDOM_FLIP", "diagonal");
  EXPECT_THROW(build_augmentation(cfg, true), Error);
  cfg.set("INPUT.RANDOM_FLIP", "none");
  cfg.set("INPUT.MIN_SIZE_TRAIN_SAMPLING", "range");  // needs two values
  EXPECT_THROW(build_augmentation(cfg, true), Error);
}

}  // namespace
}  // namespace detkit::data
