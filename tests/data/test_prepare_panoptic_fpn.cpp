// detkit prepare-panoptic-fpn's conversion (Detectron2's datasets/prepare_panoptic_fpn.py): the
// shared panoptic ground truth gives exactly the semantic labels Detectron2's fixture holds, and
// bad panoptic PNGs are errors naming the file that leave no half-written label map.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "detkit/data/image/panoptic_png_io.h"
#include "detkit/data/prepare_panoptic_fpn.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

using testing::error_of;
using testing::expect_contains;
using testing::TempDir;

const std::string kPqFixture = std::string(DETKIT_SHARED_DIR) + "/fixtures/panoptic_pq/";
const std::string kD2SemSeg =
    std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_panoptic/sem_seg/";

// A 4x3 (width x height) panoptic PNG: each row of `ids` one segment id per pixel.
void write_panoptic_png(const std::string& path, const std::vector<std::vector<int>>& ids) {
  cv::Mat bgr(static_cast<int>(ids.size()), static_cast<int>(ids[0].size()), CV_8UC3);
  for (int y = 0; y < bgr.rows; ++y)
    for (int x = 0; x < bgr.cols; ++x) {
      const int id = ids[y][x];
      bgr.at<cv::Vec3b>(y, x) = cv::Vec3b(id >> 16 & 255, id >> 8 & 255, id & 255);
    }
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  ASSERT_TRUE(cv::imwrite(path, bgr));
}

// Two images of 4x3: things (category 1 and 2) and stuff (categories 10 and 7, listed out of id
// order); segment 300 uses the id's three bytes.
std::string prepare_json(const std::string& first_segments = "") {
  return R"({"images": [{"id": 1, "file_name": "a.jpg", "height": 3, "width": 4},
                        {"id": 2, "file_name": "b.jpg", "height": 3, "width": 4}],
  "annotations": [
    {"image_id": 1, "file_name": "a.png", "segments_info": [)" +
         (first_segments.empty()
              ? std::string(R"({"id": 5, "category_id": 1}, {"id": 6, "category_id": 10},
                {"id": 70000, "category_id": 7})")
              : first_segments) +
         R"(]},
    {"image_id": 2, "file_name": "b.png", "segments_info": [{"id": 300, "category_id": 2}]}],
  "categories": [{"id": 10, "name": "wall", "isthing": 0}, {"id": 1, "name": "person", "isthing": 1},
                 {"id": 2, "name": "car", "isthing": 1}, {"id": 7, "name": "sky", "isthing": 0}]})";
}

void write_prepare_pngs(const TempDir& dir) {
  write_panoptic_png(dir.path("pan/a.png"), {{5, 5, 6, 6}, {0, 70000, 70000, 6}, {5, 0, 0, 6}});
  write_panoptic_png(dir.path("pan/b.png"), {{300, 300, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 300}});
}

cv::Mat read_grey(const std::string& path) { return cv::imread(path, cv::IMREAD_UNCHANGED); }

TEST(PreparePanopticFpn, StuffNumberedInIdOrderThingsZero) {
  const auto labels = separated_semantic_labels(
      {{1, "person", true}, {7, "sky", false}, {10, "wall", false}, {2, "car", true}});
  EXPECT_EQ(labels.at(1), 0);
  EXPECT_EQ(labels.at(2), 0);
  EXPECT_EQ(labels.at(7), 1);
  EXPECT_EQ(labels.at(10), 2);
  std::vector<PanopticCategory> many;
  for (int id = 1; id <= 255; ++id) many.push_back({id, "s" + std::to_string(id), false});
  expect_contains(error_of([&] { separated_semantic_labels(many); }),
                  "more than 254 stuff categories (category 255 's255')");
}

TEST(PreparePanopticFpn, SmallDatasetLabelled) {
  TempDir dir("prepare_panoptic_small");
  dir.write("pan.json", prepare_json());
  write_prepare_pngs(dir);
  EXPECT_EQ(prepare_panoptic_fpn(dir.path("pan.json"), dir.path("pan"), dir.path("out/stuff"),
                                 {/*num_workers=*/2}),
            2u);
  const cv::Mat a = read_grey(dir.path("out/stuff/a.png"));
  ASSERT_EQ(a.type(), CV_8UC1);
  // Categories in id order: 7 sky -> 1, 10 wall -> 2; things 0; void 255.
  const std::vector<uint8_t> expected_a = {0, 0, 2, 2, 255, 1, 1, 2, 0, 255, 255, 2};
  EXPECT_EQ(std::vector<uint8_t>(a.begin<uint8_t>(), a.end<uint8_t>()), expected_a);
  const cv::Mat b = read_grey(dir.path("out/stuff/b.png"));
  const std::vector<uint8_t> expected_b = {0, 0, 255, 255, 255, 255, 255, 255, 255, 255, 255, 0};
  EXPECT_EQ(std::vector<uint8_t>(b.begin<uint8_t>(), b.end<uint8_t>()), expected_b);
}

TEST(PreparePanopticFpn, BadPngsNamed) {
  TempDir dir("prepare_panoptic_bad");
  dir.write("pan.json", prepare_json());
  const std::string json = dir.path("pan.json"), pan = dir.path("pan"), out = dir.path("out");
  // The first image's PNG missing.
  write_panoptic_png(dir.path("pan/b.png"), {{300, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}});
  expect_contains(error_of([&] { prepare_panoptic_fpn(json, pan, out); }), pan + "/a.png");
  // Of the wrong size.
  write_panoptic_png(dir.path("pan/a.png"), {{5, 5, 6}, {0, 6, 6}, {5, 0, 0}});
  expect_contains(
      error_of([&] { prepare_panoptic_fpn(json, pan, out); }),
      pan + "/a.png: the PNG is 3x3 (width x height) but " + json + " says image 1 is 4x3");
  // An id without a segment: 0x010203 = 66051 is R 3, G 2, B 1.
  write_panoptic_png(dir.path("pan/a.png"), {{5, 5, 6, 6}, {0, 66051, 6, 6}, {5, 0, 0, 6}});
  expect_contains(error_of([&] { prepare_panoptic_fpn(json, pan, out); }),
                  pan +
                      "/a.png: pixel (x 1, y 1) has segment id 66051 (R 3, G 2, B 1), which is "
                      "not in the annotation's segments_info");
  // A grey PNG is not a panoptic one.
  ASSERT_TRUE(cv::imwrite(dir.path("pan/a.png"), cv::Mat(3, 4, CV_8UC1, cv::Scalar(5))));
  expect_contains(error_of([&] { prepare_panoptic_fpn(json, pan, out); }),
                  "a.png: a panoptic PNG must be RGB");
  // A category the file does not list (the loader's check).
  dir.write("unknown.json", prepare_json(R"({"id": 5, "category_id": 99})"));
  expect_contains(error_of([&] { prepare_panoptic_fpn(dir.path("unknown.json"), pan, out); }),
                  "annotations[0].segments_info[0]: category_id 99 is not in categories");
  // Whatever was written is whole: b.png (when converted before the failure) and no temporary
  // file beside it.
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    EXPECT_EQ(entry.path().filename(), "b.png") << entry.path();
    EXPECT_EQ(read_grey(entry.path().string()).total(), 12u);
  }
}

TEST(PreparePanopticFpn, Detectron2FixtureReproduced) {
  if (!std::filesystem::exists(kPqFixture + "panoptic_val2017_synth.json") ||
      !std::filesystem::is_directory(kD2SemSeg)) {
    GTEST_SKIP() << "the shared fixtures are absent: expected " << kPqFixture
                 << "panoptic_val2017_synth.json and " << kD2SemSeg;
  }
  TempDir dir("prepare_panoptic_fixture");
  const size_t written = prepare_panoptic_fpn(kPqFixture + "panoptic_val2017_synth.json",
                                              kPqFixture + "panoptic_val2017_synth", dir.path());
  EXPECT_EQ(written, 80u);
  size_t compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kD2SemSeg)) {
    const std::string name = entry.path().filename().string();
    const cv::Mat expected = read_grey(entry.path().string());
    const cv::Mat ours = read_grey(dir.path(name));
    ASSERT_EQ(ours.type(), CV_8UC1) << name;
    ASSERT_EQ(ours.size(), expected.size()) << name;
    const int differing = cv::countNonZero(ours != expected);
    std::cout << name << ": " << differing << " of " << expected.total()
              << " pixels differ from Detectron2's label map\n";
    EXPECT_EQ(differing, 0) << name;
    ++compared;
  }
  EXPECT_EQ(compared, 2u);
}

}  // namespace
}  // namespace detkit::data
