// ResizeShortestEdge, RandomFlip and the transforms: Detectron2's rounding and geometry, checked
// against numbers worked out by hand.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include "detkit/config/defaults.h"
#include "detkit/data/transforms/augmentation.h"
#include "detkit/data/transforms/pil_resize.h"
#include "detkit/data/transforms/sample_rng.h"
#include "detkit/data/transforms/transform.h"
#include "detkit/utils/error.h"
#include "tests/support/error_of.h"

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
  EXPECT_EQ(list.apply_polygons({{10, 5, 20, 5, 20, 15}}),
            (std::vector<std::vector<double>>{{180, 10, 160, 10, 160, 30}}));
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

void expect_error(const std::function<void()>& f, const std::string& part) {
  testing::expect_contains(testing::error_of(f), part);
}

TEST(RandomCrop, SizesFollowDetectron2sFourTypes) {
  SampleRng rng(1, 0);
  // relative: int(h * 0.5 + 0.5), int(w * 0.25 + 0.5): 480x640 -> 240x160.
  EXPECT_EQ(RandomCrop("relative", {0.5, 0.25}).get_crop_size(480, 640, rng), Shape(240, 160));
  // absolute: min(size, side).
  EXPECT_EQ(RandomCrop("absolute", {300, 700}).get_crop_size(480, 640, rng), Shape(300, 640));
  // relative_range: the two uniform draws u0, u1 of the same generator; sizes float32 first.
  SampleRng a(5, 3), b(5, 3);
  const double u0 = b.uniform(), u1 = b.uniform();
  const double s = static_cast<float>(0.9);
  const Shape expected(static_cast<int>(480 * (s + u0 * (1 - s)) + 0.5),
                       static_cast<int>(640 * (s + u1 * (1 - s)) + 0.5));
  EXPECT_EQ(RandomCrop("relative_range", {0.9, 0.9}).get_crop_size(480, 640, a), expected);
  // absolute_range: each side an integer in [min(side, lo), min(side, hi)].
  RandomCrop range("absolute_range", {384, 600});
  std::set<int> heights;
  for (uint64_t i = 0; i < 200; ++i) {
    SampleRng r(2, i);
    const auto [h, w] = range.get_crop_size(480, 640, r);
    EXPECT_GE(h, 384);
    EXPECT_LE(h, 480);
    EXPECT_GE(w, 384);
    EXPECT_LE(w, 600);
    heights.insert(h);
  }
  EXPECT_GT(heights.size(), 20u);
}

TEST(RandomCrop, WindowsLieInsideTheImageAndReachItsEdges) {
  RandomCrop crop("relative_range", {0.5, 0.5});
  bool left = false, bottom = false;
  for (uint64_t i = 0; i < 300; ++i) {
    SampleRng rng(9, i);
    auto t = crop.get_transform(30, 40, rng);
    const auto* window = dynamic_cast<const CropTransform*>(t.get());
    ASSERT_NE(window, nullptr);
    // The window's corners through apply_coords: (x0, y0) -> (0, 0).
    double corner[2] = {0, 0};
    window->apply_coords(corner, 1);
    const double x0 = -corner[0], y0 = -corner[1];
    EXPECT_GE(x0, 0);
    EXPECT_GE(y0, 0);
    EXPECT_LE(x0 + window->new_width(), 40);
    EXPECT_LE(y0 + window->new_height(), 30);
    left |= x0 == 0;
    bottom |= y0 + window->new_height() == 30;
  }
  EXPECT_TRUE(left && bottom);
}

TEST(RandomCrop, BadSettingsAreNamed) {
  expect_error([] { RandomCrop("square", {0.5, 0.5}); }, "INPUT.CROP.TYPE must be");
  expect_error([] { RandomCrop("relative", {0.5}); }, "INPUT.CROP.SIZE must have 2 values");
  expect_error([] { RandomCrop("relative", {0.5, 1.5}); }, "each value must be in (0, 1]");
  expect_error([] { RandomCrop("absolute", {0.5, 10}); }, "each value must be an integer >= 1");
  expect_error(
      [] {
        RandomCrop("absolute_range", {600, 384});
      },
      "the first value (min) must not exceed the second (max)");
  // A relative window of no pixels on a tiny image.
  SampleRng rng(1, 0);
  expect_error(
      [&] {
        RandomCrop("relative", {0.1, 0.1}).get_transform(3, 3, rng);
      },
      "does not fit a 3x3 image");
}

TEST(CropTransform, CutsImagesMasksPointsAndPolygons) {
  cv::Mat image(4, 5, CV_8UC1);
  for (int i = 0; i < 20; ++i) image.data[i] = static_cast<uchar>(i);
  const CropTransform crop(1, 2, 3, 2);  // x in [1, 4), y in [2, 4)
  const cv::Mat cut = crop.apply_image(image);
  ASSERT_EQ(cut.rows, 2);
  ASSERT_EQ(cut.cols, 3);
  EXPECT_EQ(cut.at<uchar>(0, 0), 11);
  EXPECT_EQ(cut.at<uchar>(1, 2), 18);
  EXPECT_EQ(crop.apply_segmentation(image).at<uchar>(1, 0), 16);
  EXPECT_EQ(crop.apply_box({0, 0, 3, 3}), (std::array<double, 4>{-1, -2, 2, 1}));
  // The triangle (0,0), (4,0), (0,4) in the window x in [1, 4], y in [2, 4]: the triangle
  // (1,2), (2,2), (1,3) moved by (-1, -2).
  const auto polygons = crop.apply_polygons({{0, 0, 4, 0, 0, 4}, {10, 10, 11, 10, 11, 11}});
  ASSERT_EQ(polygons.size(), 1u);
  std::set<std::pair<double, double>> points;
  for (size_t k = 0; k < polygons[0].size(); k += 2)
    points.insert({polygons[0][k], polygons[0][k + 1]});
  EXPECT_EQ(points, (std::set<std::pair<double, double>>{{0, 0}, {1, 0}, {0, 1}}));
  expect_error([&] { CropTransform(3, 3, 3, 2).apply_image(image); },
               "is not inside the 5x4 image");
}

TEST(BuildAugmentation, CropComesFirstInTrainingOnly) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list(
      {"INPUT.CROP.ENABLED", "True", "INPUT.CROP.TYPE", "absolute", "INPUT.CROP.SIZE", "[8, 8]"});
  const auto train = build_augmentation(cfg, true);
  ASSERT_EQ(train.size(), 3u);
  EXPECT_NE(dynamic_cast<const RandomCrop*>(train[0].get()), nullptr);
  EXPECT_EQ(build_augmentation(cfg, false).size(), 1u);
  // The size the resize sees is the window's: 8x8 to short side 800 is 800x800.
  SampleRng rng(3, 0);
  const TransformList list = apply_augmentations(train, 20, 30, rng);
  cv::Mat image(20, 30, CV_8UC3, cv::Scalar(1, 2, 3));
  const cv::Mat out = list.apply_image(image);
  EXPECT_EQ(out.rows, 800);
  EXPECT_EQ(out.cols, 800);
  cfg.merge_from_list({"INPUT.CROP.TYPE", "relative"});
  expect_error([&] { build_augmentation(cfg, true); }, "each value must be in (0, 1]");
}

}  // namespace
}  // namespace detkit::data
