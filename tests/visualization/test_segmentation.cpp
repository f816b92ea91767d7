// draw_panoptic_seg / draw_sem_seg on hand-made maps: segments filled with their colour at
// Detectron2's opacity, void pixels untouched, labels drawn on top.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "detkit/utils/error.h"
#include "detkit/visualization/segmentation.h"

namespace detkit::visualization {
namespace {

const cv::Vec3b kGrey(100, 100, 100);

cv::Mat grey_image() { return cv::Mat(200, 300, CV_8UC3, cv::Scalar(100, 100, 100)); }

VisualizerOptions no_enlargement() {
  VisualizerOptions options;
  options.min_short_side = 0;
  return options;
}

// What the fill of `color` at opacity `alpha` makes of a grey pixel.
cv::Vec3b blended(const cv::Scalar& color, double alpha) {
  cv::Vec3b out;
  for (int c = 0; c < 3; ++c)
    out[c] = cv::saturate_cast<uint8_t>(100 * (1 - alpha) + color[c] * alpha);
  return out;
}

void expect_near(const cv::Vec3b& actual, const cv::Vec3b& expected, const char* where) {
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(actual[c], expected[c], 1) << where << " channel " << c;
}

// The darkest pixel of a region, summed over channels: labels sit on a near-black box.
int darkest(const cv::Mat& canvas, const cv::Rect& region) {
  int lowest = 3 * 255;
  for (int y = region.y; y < region.y + region.height; ++y)
    for (int x = region.x; x < region.x + region.width; ++x) {
      const cv::Vec3b p = canvas.at<cv::Vec3b>(y, x);
      lowest = std::min(lowest, p[0] + p[1] + p[2]);
    }
  return lowest;
}

// Rows 0-99: stuff (id 1, class 2); rows 120-179 x cols 20-79: a thing (id 2); id 7 (no
// segment) at rows 120-179 x cols 200-259; void (0) elsewhere.
structures::PanopticOutput hand_made_panoptic() {
  at::Tensor ids = at::zeros({200, 300}, at::kInt);
  ids.narrow(0, 0, 100).fill_(1);
  ids.narrow(0, 120, 60).narrow(1, 20, 60).fill_(2);
  ids.narrow(0, 120, 60).narrow(1, 200, 60).fill_(7);
  structures::PanopticSegment stuff;
  stuff.id = 1, stuff.category_id = 2, stuff.area = 30000;
  structures::PanopticSegment thing;
  thing.id = 2, thing.isthing = true, thing.category_id = 0, thing.score = 0.87,
  thing.instance_id = 0;
  structures::PanopticSegment empty;  // a segment without pixels is drawn as nothing
  empty.id = 3, empty.category_id = 1;
  return {ids, {stuff, thing, empty}};
}

TEST(DrawPanopticSeg, FillsSegmentsLeavesVoidAndLabels) {
  const cv::Mat image = grey_image();
  const cv::Mat canvas = draw_panoptic_seg(image, hand_made_panoptic(), {"person"},
                                           {"things", "sky", "grass"}, no_enlargement());
  ASSERT_EQ(canvas.size(), image.size());
  // Stuff in its class's colour, the thing in the first instance colour, both at opacity 0.7.
  expect_near(canvas.at<cv::Vec3b>(20, 280), blended(class_color(2), kPanopticAlpha), "stuff");
  expect_near(canvas.at<cv::Vec3b>(130, 30), blended(instance_color(0), kPanopticAlpha), "thing");
  // Void and the id without a segment stay as they were.
  EXPECT_EQ(canvas.at<cv::Vec3b>(190, 290), kGrey);
  EXPECT_EQ(canvas.at<cv::Vec3b>(150, 230), kGrey);
  EXPECT_EQ(canvas.at<cv::Vec3b>(110, 150), kGrey);
  // Labels: the stuff's at the median of its region (x 149.5, y 49.5), the thing's at its median
  // (x 49.5, y 149.5), each on a dark box.
  EXPECT_LT(darkest(canvas, cv::Rect(140, 52, 20, 6)), 150);
  EXPECT_LT(darkest(canvas, cv::Rect(40, 152, 20, 6)), 150);
  EXPECT_FALSE(cv::countNonZero(canvas.reshape(1) != image.reshape(1)) == 0);
}

TEST(DrawPanopticSeg, EnlargesSmallImages) {
  const cv::Mat canvas = draw_panoptic_seg(grey_image(), hand_made_panoptic(), {}, {});
  EXPECT_EQ(canvas.size(), cv::Size(300 * 2, 200 * 2));  // short side 200 -> 400
  EXPECT_EQ(canvas.at<cv::Vec3b>(190 * 2, 290 * 2), kGrey);
}

TEST(DrawPanopticSeg, MapOfAnotherSizeIsAnError) {
  structures::PanopticOutput panoptic = hand_made_panoptic();
  panoptic.ids = panoptic.ids.narrow(0, 0, 100);
  EXPECT_THROW(draw_panoptic_seg(grey_image(), panoptic, {}, {}), Error);
}

TEST(DrawSemSeg, DrawsNamedClassesOnly) {
  at::Tensor labels = at::zeros({200, 300}, at::kLong);
  labels.narrow(1, 100, 100).fill_(1);
  labels.narrow(1, 200, 100).fill_(5);  // no name: Detectron2 draws only named classes
  const cv::Mat canvas = draw_sem_seg(grey_image(), labels, {"things", "sky"}, no_enlargement());
  expect_near(canvas.at<cv::Vec3b>(10, 10), blended(class_color(0), kSemSegAlpha), "class 0");
  expect_near(canvas.at<cv::Vec3b>(10, 150), blended(class_color(1), kSemSegAlpha), "class 1");
  EXPECT_EQ(canvas.at<cv::Vec3b>(10, 250), kGrey);
  EXPECT_LT(darkest(canvas, cv::Rect(140, 102, 20, 6)), 150);  // "sky" at (149.5, 99.5)
}

TEST(DrawSemSeg, WithoutNamesDrawsEveryClass) {
  at::Tensor labels = at::full({200, 300}, 5, at::kLong);
  const cv::Mat canvas = draw_sem_seg(grey_image(), labels, {}, no_enlargement());
  expect_near(canvas.at<cv::Vec3b>(10, 250), blended(class_color(5), kSemSegAlpha), "class 5");
}

TEST(SegmentationHelpers, AreasLabelsAndColours) {
  at::Tensor map = at::tensor({0, 3, 3, 1, 3}, at::kInt);
  const auto areas = value_areas(map);
  EXPECT_EQ(areas, (std::map<int64_t, int64_t>{{0, 1}, {1, 1}, {3, 3}}));
  EXPECT_EQ(stuff_label(1, {"things", "sky"}), "sky");
  EXPECT_EQ(stuff_label(4, {"things", "sky"}), "stuff 4");
  // Detectron2's colormap: entry 0 is RGB (0, 0.447, 0.741).
  EXPECT_EQ(class_color(0), cv::Scalar(0.741 * 255, 0.447 * 255, 0));
  EXPECT_EQ(class_color(24), class_color(0));
}

}  // namespace
}  // namespace detkit::visualization
