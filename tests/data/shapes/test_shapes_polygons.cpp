// Mask -> polygon tracing of the shapes generator: polygons rasterise back to the same pixels.
#include <gtest/gtest.h>

#include <array>
#include <opencv2/imgproc.hpp>
#include <random>
#include <vector>

#include "detkit/data/shapes/shapes_polygons.h"
#include "detkit/structures/mask_ops.h"

namespace detkit::data {
namespace {

cv::Mat rasterise(const Polygons& polygons, int height, int width) {
  const std::vector<uint8_t> pixels =
      mask_ops::decode(mask_ops::from_polygons(polygons, height, width));
  return cv::Mat(height, width, CV_8U, const_cast<uint8_t*>(pixels.data())).clone();
}

int count_differences(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat diff;
  cv::compare(a != 0, b != 0, diff, cv::CMP_NE);
  return cv::countNonZero(diff);
}

TEST(ShapesPolygons, SinglePixelIsItsSquare) {
  cv::Mat mask = cv::Mat::zeros(5, 6, CV_8U);
  mask.at<uint8_t>(2, 3) = 1;
  const MaskOutline outline = trace_mask_outline(mask);
  ASSERT_EQ(outline.polygons.size(), 1u);
  EXPECT_EQ(outline.num_holes, 0);
  const std::array<double, 4> box{3, 2, 1, 1};
  EXPECT_EQ(polygons_bbox(outline.polygons), box);
  EXPECT_EQ(count_differences(rasterise(outline.polygons, 5, 6), mask), 0);
}

TEST(ShapesPolygons, EmptyMaskGivesNoPolygons) {
  const MaskOutline outline = trace_mask_outline(cv::Mat::zeros(4, 4, CV_8U));
  EXPECT_TRUE(outline.polygons.empty());
  const std::array<double, 4> zeros{0, 0, 0, 0};
  EXPECT_EQ(polygons_bbox(outline.polygons), zeros);
}

TEST(ShapesPolygons, ComponentsAndHolesAreCounted) {
  cv::Mat mask = cv::Mat::zeros(20, 30, CV_8U);
  cv::rectangle(mask, cv::Rect(2, 2, 8, 8), 1, cv::FILLED);
  cv::rectangle(mask, cv::Rect(4, 4, 3, 2), 0, cv::FILLED);  // a hole
  cv::rectangle(mask, cv::Rect(15, 3, 10, 12), 1, cv::FILLED);
  mask.at<uint8_t>(19, 29) = 1;  // touches the image corner
  const MaskOutline outline = trace_mask_outline(mask);
  EXPECT_EQ(outline.polygons.size(), 3u);
  EXPECT_EQ(outline.num_holes, 1);
}

TEST(ShapesPolygons, DiagonalNeighboursAndConcaveCornersRoundTrip) {
  cv::Mat mask = cv::Mat::zeros(8, 8, CV_8U);
  mask.at<uint8_t>(1, 1) = mask.at<uint8_t>(2, 2) = mask.at<uint8_t>(3, 3) = 1;  // diagonal
  cv::rectangle(mask, cv::Rect(4, 4, 3, 1), 1, cv::FILLED);                      // an L
  cv::rectangle(mask, cv::Rect(4, 4, 1, 3), 1, cv::FILLED);
  const MaskOutline outline = trace_mask_outline(mask);
  EXPECT_EQ(outline.num_holes, 0);
  EXPECT_EQ(count_differences(rasterise(outline.polygons, 8, 8), mask), 0);
}

TEST(ShapesPolygons, RandomMasksRoundTripExactly) {
  std::mt19937 random(3);
  int checked = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int height = 40 + static_cast<int>(random() % 40);
    const int width = 40 + static_cast<int>(random() % 40);
    cv::Mat mask = cv::Mat::zeros(height, width, CV_8U);
    const cv::RotatedRect box(cv::Point2f(random() % width, random() % height),
                              cv::Size2f(3 + random() % 40, 3 + random() % 40), random() % 180);
    cv::Point2f corners[4];
    box.points(corners);
    std::vector<cv::Point> polygon(corners, corners + 4);
    cv::fillConvexPoly(mask, polygon, 1);
    cv::circle(mask, cv::Point(random() % width, random() % height), 2 + random() % 15, 1, -1);
    cv::circle(mask, cv::Point(random() % width, random() % height), 2 + random() % 15, 0, -1);
    const MaskOutline outline = trace_mask_outline(mask);
    if (outline.num_holes > 0 || outline.polygons.empty()) continue;
    ++checked;
    ASSERT_EQ(count_differences(rasterise(outline.polygons, height, width), mask), 0)
        << "trial " << trial;
    std::vector<cv::Point> on;
    cv::findNonZero(mask, on);
    const cv::Rect tight = cv::boundingRect(on);
    const std::array<double, 4> box_xywh{static_cast<double>(tight.x), static_cast<double>(tight.y),
                                         static_cast<double>(tight.width),
                                         static_cast<double>(tight.height)};
    EXPECT_EQ(polygons_bbox(outline.polygons), box_xywh) << "trial " << trial;
  }
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace detkit::data
