// pil_nearest_resize picks the source pixels PIL's Image.resize(NEAREST) picks (Pillow 13,
// recorded below), where floor((x + 0.5) * scale) and OpenCV's INTER_NEAREST_EXACT pick others.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include "detkit/data/transforms/pil_resize.h"
#include "detkit/data/transforms/transform.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

// A (1, n) int32 row whose pixel x holds x: resized, each pixel tells its source column.
cv::Mat column_numbers(int n) {
  cv::Mat row(1, n, CV_32SC1);
  for (int x = 0; x < n; ++x) row.at<int>(0, x) = x;
  return row;
}

TEST(PilNearestResize, PicksPilsSourcePixels) {
  // Columns where Pillow's running sum differs from the exact product: 640 -> 480 at output
  // 4, 16, 19 (Pillow 5, 21, 25; floor((x + 0.5) 4 / 3) 6, 22, 26) and 640 -> 427 at 213.
  const cv::Mat to480 = pil_nearest_resize(column_numbers(640), 1, 480);
  EXPECT_EQ(to480.at<int>(0, 4), 5);
  EXPECT_EQ(to480.at<int>(0, 16), 21);
  EXPECT_EQ(to480.at<int>(0, 19), 25);
  EXPECT_EQ(to480.at<int>(0, 0), 0);
  EXPECT_EQ(to480.at<int>(0, 479), 639);
  EXPECT_EQ(pil_nearest_resize(column_numbers(640), 1, 427).at<int>(0, 213), 319);
  // Up: each source pixel repeated.
  const cv::Mat up = pil_nearest_resize(column_numbers(3), 1, 6);
  for (int x = 0; x < 6; ++x) EXPECT_EQ(up.at<int>(0, x), x / 2);
}

TEST(PilNearestResize, RowsAndChannelsToo) {
  cv::Mat image(640, 2, CV_8UC3);
  for (int y = 0; y < 640; ++y)
    for (int x = 0; x < 2; ++x) image.at<cv::Vec3b>(y, x) = cv::Vec3b(y % 256, y / 256, x);
  const cv::Mat out = pil_nearest_resize(image, 480, 2);
  EXPECT_EQ(out.at<cv::Vec3b>(16, 1), cv::Vec3b(21, 0, 1));
  EXPECT_EQ(out.at<cv::Vec3b>(479, 0), cv::Vec3b(639 % 256, 2, 0));
}

TEST(PilNearestResize, IsHowResizeTransformMapsSegmentations) {
  cv::Mat mask(1, 640, CV_8UC1);
  for (int x = 0; x < 640; ++x) mask.at<uchar>(0, x) = x % 7;
  const cv::Mat out = ResizeTransform(1, 640, 1, 480).apply_segmentation(mask);
  EXPECT_EQ(out.at<uchar>(0, 4), 5 % 7);
  EXPECT_THROW(ResizeTransform(2, 640, 1, 480).apply_segmentation(mask), Error);
}

}  // namespace
}  // namespace detkit::data
