// Training curves from metrics.json: the reader (records, a bad line named by number), and the
// picture: each panel draws its curves in its own third, an empty panel says so.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include "detkit/utils/error.h"
#include "detkit/visualization/training_curves.h"
#include "detkit/visualization/visualizer.h"
#include "tests/support/temp_dir.h"

namespace detkit::visualization {
namespace {

// Pixels of exactly `color` in rows [y0, y1) of `img`.
int64_t pixels_of(const cv::Mat& img, cv::Scalar color, int y0, int y1) {
  int64_t n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = 0; x < img.cols; ++x) {
      const cv::Vec3b p = img.at<cv::Vec3b>(y, x);
      bool same = true;
      for (int c = 0; c < 3; ++c) same &= std::abs(p[c] - cv::saturate_cast<uchar>(color[c])) <= 1;
      n += same;
    }
  return n;
}

TEST(TrainingCurves, ReadsMetricsJsonAndNamesABadLine) {
  testing::TempDir dir("curves");
  const std::string file = dir.write(
      "metrics.json",
      "{\"iteration\": 19, \"total_loss\": 2.0, \"lr\": 0.002, \"time\": 1.5}\n"
      "{\"iteration\": 39, \"total_loss\": 1.0, \"lr\": 0.004, \"note\": \"text\"}\n"
      "{\"bbox/AP\": 12.5, \"iteration\": 39}\n");
  const MetricsHistory h = read_metrics_json(file);
  EXPECT_EQ(h.at("total_loss"), (std::vector<std::pair<int64_t, double>>{{19, 2.0}, {39, 1.0}}));
  EXPECT_EQ(h.at("bbox/AP"), (std::vector<std::pair<int64_t, double>>{{39, 12.5}}));
  EXPECT_EQ(h.count("note"), 0u);  // not a number
  const std::string bad = dir.write("bad.json", "{\"iteration\": 1, \"lr\": 0.1}\n[1, 2]\n");
  try {
    read_metrics_json(bad);
    FAIL() << "a line that is not a record was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json:2: not a metrics.json record"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_metrics_json(dir.path("absent.json")), Error);
  EXPECT_THROW(draw_training_curves({}), Error);
}

TEST(TrainingCurves, EachPanelDrawsItsCurvesInItsThird) {
  MetricsHistory h;
  for (int64_t it = 19; it < 400; it += 20) {
    h["total_loss"].emplace_back(it, 2.0 / (1 + it / 100.0));
    h["loss_cls"].emplace_back(it, 0.5 / (1 + it / 50.0));
    h["lr"].emplace_back(it, it < 300 ? 0.01 : 0.001);
  }
  const cv::Mat with_ap = [&] {
    MetricsHistory a = h;
    a["bbox/AP"] = {{199, 20.0}, {399, 35.0}};
    a["segm/AP"] = {{199, 22.0}, {399, 38.0}};
    return draw_training_curves(a, 1200, 1350);
  }();
  ASSERT_EQ(with_ap.rows, 1350);
  ASSERT_EQ(with_ap.cols, 1200);
  const cv::Scalar first = instance_color(0), second = instance_color(1);
  // The first series of each panel (total_loss, lr, bbox/AP) and the second where there is one.
  for (int panel = 0; panel < 3; ++panel) {
    EXPECT_GT(pixels_of(with_ap, first, panel * 450, panel * 450 + 450), 200) << "panel " << panel;
  }
  EXPECT_GT(pixels_of(with_ap, second, 0, 450), 200);     // loss_cls
  EXPECT_GT(pixels_of(with_ap, second, 900, 1350), 100);  // segm/AP
  const cv::Mat without_ap = draw_training_curves(h, 1200, 1350);
  EXPECT_EQ(pixels_of(without_ap, first, 900, 1350), 0);  // "(nothing recorded)"
}

}  // namespace
}  // namespace detkit::visualization
