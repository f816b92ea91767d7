// VIS_PERIOD's picture: the input image once per panel, each panel's boxes drawn on it, side by
// side, as PNG; a model answers a request once.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include "detkit/engine/training_visualization.h"

namespace detkit::engine {
namespace {

TEST(TrainingVisualization, PanelsSideBySideWithTheirBoxesDrawn) {
  // A grey 48 x 32 image in BGR order, one box in the right panel only.
  modeling::TrainingVisualization v{"Left: GT bounding boxes;  Right: Predicted proposals",
                                    at::full({3, 32, 48}, 128.0),
                                    {at::zeros({0, 4}), at::tensor({8.0, 4.0, 40.0, 28.0}).view({1, 4})}};
  const RenderedImage image = render_training_visualization(v, "BGR");
  EXPECT_EQ(image.height, 32);
  EXPECT_EQ(image.width, 96);
  const cv::Mat png = cv::imdecode(std::vector<uint8_t>(image.png.begin(), image.png.end()),
                                   cv::IMREAD_COLOR);
  ASSERT_EQ(png.rows, 32);
  ASSERT_EQ(png.cols, 96);
  // The left panel is the image untouched; the right one has the box's outline.
  const cv::Mat left = png.colRange(0, 48).clone();
  EXPECT_EQ(cv::countNonZero(left.reshape(1) != 128), 0);
  const cv::Vec3b edge = png.at<cv::Vec3b>(16, 48 + 8), inside = png.at<cv::Vec3b>(16, 48 + 24);
  EXPECT_NE(edge, cv::Vec3b(128, 128, 128));
  EXPECT_EQ(inside, cv::Vec3b(128, 128, 128));
}

TEST(TrainingVisualization, RgbInputsAreDrawnInTheirColours) {
  at::Tensor rgb = at::zeros({3, 8, 8});
  rgb[0].fill_(255.0);  // red in RGB order
  const RenderedImage image = render_training_visualization({"x", rgb, {at::zeros({0, 4})}}, "RGB");
  const cv::Mat png = cv::imdecode(std::vector<uint8_t>(image.png.begin(), image.png.end()),
                                   cv::IMREAD_COLOR);
  EXPECT_EQ(png.at<cv::Vec3b>(4, 4), cv::Vec3b(0, 0, 255));  // BGR once decoded
}

}  // namespace
}  // namespace detkit::engine
