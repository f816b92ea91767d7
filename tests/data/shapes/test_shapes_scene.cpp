// One rendered shapes scene: visible masks, their annotations, and what the image shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <set>

#include "detkit/data/shapes/shapes_coco.h"
#include "detkit/data/shapes/shapes_scene.h"
#include "detkit/structures/mask_ops.h"

namespace detkit::data {
namespace {

SceneOptions small_scene() {
  SceneOptions options;
  options.width = 160;
  options.height = 120;
  return options;
}

// Mean absolute colour difference (summed over channels) between 4-neighbour pixel pairs: pairs
// across the mask's boundary, and pairs inside it.
struct EdgeContrast {
  double across = 0, inside = 0;
};

EdgeContrast edge_contrast(const cv::Mat& image, const cv::Mat& mask) {
  double across = 0, inside = 0;
  int n_across = 0, n_inside = 0;
  for (int y = 0; y < image.rows; ++y) {
    for (int x = 0; x < image.cols; ++x) {
      for (const cv::Point& step : {cv::Point(1, 0), cv::Point(0, 1)}) {
        const cv::Point q(x + step.x, y + step.y);
        if (q.x >= image.cols || q.y >= image.rows) continue;
        const bool in_p = mask.at<uint8_t>(y, x) != 0, in_q = mask.at<uint8_t>(q) != 0;
        if (!in_p && !in_q) continue;
        const cv::Vec3b a = image.at<cv::Vec3b>(y, x), b = image.at<cv::Vec3b>(q);
        double d = 0;
        for (int c = 0; c < 3; ++c) d += std::abs(a[c] - b[c]);
        if (in_p && in_q) {
          inside += d, ++n_inside;
        } else {
          across += d, ++n_across;
        }
      }
    }
  }
  return {across / std::max(1, n_across), inside / std::max(1, n_inside)};
}

TEST(ShapesScene, SameSeedSameSceneOtherSeedDiffers) {
  const ShapesScene a = render_scene(11, small_scene());
  const ShapesScene b = render_scene(11, small_scene());
  const ShapesScene c = render_scene(12, small_scene());
  ASSERT_EQ(a.image.size(), cv::Size(160, 120));
  ASSERT_EQ(a.image.type(), CV_8UC3);
  EXPECT_EQ(cv::norm(a.image, b.image, cv::NORM_INF), 0);
  ASSERT_EQ(a.objects.size(), b.objects.size());
  for (size_t i = 0; i < a.objects.size(); ++i) {
    EXPECT_EQ(cv::norm(a.objects[i].visible, b.objects[i].visible, cv::NORM_INF), 0);
  }
  EXPECT_GT(cv::norm(a.image, c.image, cv::NORM_L1), 0);
}

TEST(ShapesScene, AnnotationsAreExactlyTheVisibleDisjointParts) {
  std::set<int> categories;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    const ShapesScene scene = render_scene(seed, small_scene());
    const std::vector<ShapesAnnotation> annotations = annotate_scene(scene);
    ASSERT_EQ(annotations.size(), scene.objects.size());
    ASSERT_GE(scene.objects.size(), 1u) << "seed " << seed;
    ASSERT_LE(scene.objects.size(), 6u) << "seed " << seed;
    cv::Mat claimed = cv::Mat::zeros(scene.image.size(), CV_8U);
    for (size_t i = 0; i < annotations.size(); ++i) {
      const SceneObject& object = scene.objects[i];
      const int visible_area = cv::countNonZero(object.visible);
      EXPECT_GE(visible_area, 0.3 * object.full_area) << "seed " << seed << " object " << i;
      EXPECT_EQ(annotations[i].area, visible_area) << "seed " << seed << " object " << i;
      const std::vector<uint8_t> pixels = mask_ops::decode(
          mask_ops::from_polygons(annotations[i].segmentation, scene.image.rows, scene.image.cols));
      const cv::Mat decoded(scene.image.size(), CV_8U, const_cast<uint8_t*>(pixels.data()));
      EXPECT_EQ(cv::norm(decoded, object.visible, cv::NORM_L1), 0)
          << "seed " << seed << " object " << i;
      cv::Mat overlap;
      cv::bitwise_and(claimed, object.visible, overlap);
      EXPECT_EQ(cv::countNonZero(overlap), 0) << "seed " << seed << " object " << i;
      cv::bitwise_or(claimed, object.visible, claimed);
      categories.insert(annotations[i].category_id);
    }
  }
  EXPECT_EQ(categories, (std::set<int>{1, 2, 3}));
}

TEST(ShapesScene, ShapeEdgesStandOutWhereTheAnnotationsSayTheyAre) {
  int checked = 0;
  for (uint64_t seed = 100; seed < 120; ++seed) {
    const ShapesScene scene = render_scene(seed, small_scene());
    for (size_t i = 0; i < scene.objects.size(); ++i) {
      const cv::Mat& mask = scene.objects[i].visible;
      const EdgeContrast at_edges = edge_contrast(scene.image, mask);
      EXPECT_GT(at_edges.across, 60) << "seed " << seed << " object " << i;
      EXPECT_GT(at_edges.across, 2 * at_edges.inside) << "seed " << seed << " object " << i;
      // The same mask moved by a few pixels no longer sits on the edges.
      cv::Mat moved;
      cv::warpAffine(mask, moved, cv::Mat_<double>({2, 3}, {1, 0, 4, 0, 1, 3}), mask.size(),
                     cv::INTER_NEAREST);
      EXPECT_LT(edge_contrast(scene.image, moved).across, 0.85 * at_edges.across)
          << "seed " << seed << " object " << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

TEST(ShapesScene, SizesSpanSmallToLarge) {
  double smallest = 1, largest = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    SceneOptions options = small_scene();
    const ShapesScene scene = render_scene(seed, options);
    for (const SceneObject& object : scene.objects) {
      if (cv::countNonZero(object.visible) < object.full_area) continue;  // occluded
      const cv::Rect box = cv::boundingRect(object.visible);
      const double extent = std::max(box.width, box.height) / 120.0;
      smallest = std::min(smallest, extent);
      largest = std::max(largest, extent);
    }
  }
  EXPECT_LT(smallest, 0.1);
  EXPECT_GT(largest, 0.3);
  EXPECT_LT(largest, 0.5);
}

}  // namespace
}  // namespace detkit::data
