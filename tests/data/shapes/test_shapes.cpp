// The synthetic shapes dataset on disk: COCO JSON, images, determinism, option checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <set>
#include <string>
#include <vector>

#include "detkit/data/shapes/shapes.h"
#include "detkit/structures/mask_ops.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

ShapesOptions small_options(const std::string& out_dir) {
  ShapesOptions options;
  options.out_dir = out_dir;
  options.num_train = 6;
  options.num_val = 3;
  options.width = 96;
  options.height = 80;
  options.seed = 7;
  return options;
}

Json load_split(const std::string& out_dir, const std::string& split) {
  return Json::parse(read_file(out_dir + "/annotations/instances_" + split + ".json"));
}

std::vector<std::string> dataset_files(const std::string& out_dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(out_dir)) {
    if (entry.is_regular_file()) files.push_back(fs::relative(entry.path(), out_dir).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

mask_ops::RLE annotation_rle(const Json& annotation, int height, int width) {
  return mask_ops::from_polygons(
      annotation.at("segmentation").get<std::vector<std::vector<double>>>(), height, width);
}

TEST(ShapesDataset, WritesCocoFilesThatMatchTheOptions) {
  testing::TempDir dir("shapes_coco");
  const ShapesOptions options = small_options(dir.path("out"));
  make_shapes(options);
  for (const auto& [split, count] : {std::pair<std::string, int>{"train", options.num_train},
                                     std::pair<std::string, int>{"val", options.num_val}}) {
    SCOPED_TRACE(split);
    const Json coco = load_split(options.out_dir, split);
    ASSERT_EQ(coco.at("images").size(), static_cast<size_t>(count));
    ASSERT_EQ(coco.at("categories").size(), 3u);
    const char* names[] = {"circle", "triangle", "rectangle"};
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(coco["categories"][i].at("id"), i + 1);
      EXPECT_EQ(coco["categories"][i].at("name"), names[i]);
    }
    std::map<int, int> annotations_per_image;
    for (const Json& image : coco["images"]) {
      EXPECT_EQ(image.at("width"), options.width);
      EXPECT_EQ(image.at("height"), options.height);
      const std::string path =
          options.out_dir + "/" + split + "/" + image.at("file_name").get<std::string>();
      const cv::Mat pixels = cv::imread(path, cv::IMREAD_COLOR);
      ASSERT_FALSE(pixels.empty()) << path;
      EXPECT_EQ(pixels.cols, options.width) << path;
      EXPECT_EQ(pixels.rows, options.height) << path;
      EXPECT_TRUE(annotations_per_image.emplace(image.at("id").get<int>(), 0).second);
    }
    std::set<int> annotation_ids;
    for (const Json& annotation : coco.at("annotations")) {
      const int id = annotation.at("id");
      SCOPED_TRACE("annotation " + std::to_string(id));
      EXPECT_TRUE(annotation_ids.insert(id).second);
      ASSERT_EQ(annotations_per_image.count(annotation.at("image_id").get<int>()), 1u);
      ++annotations_per_image[annotation["image_id"]];
      const int category = annotation.at("category_id");
      EXPECT_TRUE(category >= 1 && category <= 3);
      EXPECT_EQ(annotation.at("iscrowd"), 0);
      ASSERT_FALSE(annotation.at("segmentation").empty());
      for (const Json& polygon : annotation["segmentation"]) {
        EXPECT_GE(polygon.size(), 6u);
        EXPECT_EQ(polygon.size() % 2, 0u);
      }
      const mask_ops::RLE rle = annotation_rle(annotation, options.height, options.width);
      EXPECT_EQ(annotation.at("area").get<double>(), static_cast<double>(mask_ops::area(rle)));
      const auto bbox = annotation.at("bbox").get<std::array<double, 4>>();
      EXPECT_GE(bbox[0], 0);
      EXPECT_GE(bbox[1], 0);
      EXPECT_GT(bbox[2], 0);
      EXPECT_GT(bbox[3], 0);
      EXPECT_LE(bbox[0] + bbox[2], options.width);
      EXPECT_LE(bbox[1] + bbox[3], options.height);
      EXPECT_EQ(bbox, mask_ops::to_bbox(rle));  // the polygons' extent is their pixels' extent
    }
    for (const auto& [image_id, n] : annotations_per_image) {
      EXPECT_GE(n, options.min_objects) << "image " << image_id;
      EXPECT_LE(n, options.max_objects) << "image " << image_id;
    }
  }
}

TEST(ShapesDataset, AnnotationsOfAnImageDoNotOverlap) {
  testing::TempDir dir("shapes_overlap");
  ShapesOptions options = small_options(dir.path("out"));
  options.num_train = 12;
  options.num_val = 0;
  options.min_objects = 4;
  make_shapes(options);
  const Json coco = load_split(options.out_dir, "train");
  std::map<int, std::vector<int>> coverage;  // image id -> annotations claiming each pixel
  for (const Json& annotation : coco.at("annotations")) {
    std::vector<int>& claims = coverage[annotation.at("image_id")];
    claims.resize(options.width * options.height);
    const std::vector<uint8_t> pixels =
        mask_ops::decode(annotation_rle(annotation, options.height, options.width));
    for (size_t i = 0; i < pixels.size(); ++i) claims[i] += pixels[i];
  }
  ASSERT_EQ(coverage.size(), static_cast<size_t>(options.num_train));
  for (const auto& [image_id, claims] : coverage) {
    const auto overlapping =
        std::count_if(claims.begin(), claims.end(), [](int n) { return n > 1; });
    EXPECT_LE(overlapping, 3) << "image " << image_id;
  }
}

TEST(ShapesDataset, SameSeedGivesIdenticalBytesOtherSeedDiffers) {
  testing::TempDir dir("shapes_seed");
  ShapesOptions first = small_options(dir.path("first"));
  first.num_workers = 1;
  ShapesOptions second = small_options(dir.path("second"));
  second.num_workers = 3;
  ShapesOptions other = small_options(dir.path("other"));
  other.seed = first.seed + 1;
  make_shapes(first);
  make_shapes(second);
  make_shapes(other);
  const std::vector<std::string> files = dataset_files(first.out_dir);
  ASSERT_EQ(files.size(), 4u + first.num_train + first.num_val);  // 2 instances, 2 keypoint files
  ASSERT_EQ(dataset_files(second.out_dir), files);
  ASSERT_EQ(dataset_files(other.out_dir), files);
  int differing = 0;
  for (const std::string& file : files) {
    EXPECT_EQ(read_file(first.out_dir + "/" + file), read_file(second.out_dir + "/" + file))
        << file;
    differing += read_file(first.out_dir + "/" + file) != read_file(other.out_dir + "/" + file);
  }
  EXPECT_EQ(differing, static_cast<int>(files.size()));
}

void expect_option_error(const ShapesOptions& options, const std::string& option) {
  try {
    make_shapes(options);
    ADD_FAILURE() << "no error for a bad " << option;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(option), std::string::npos) << e.what();
  }
}

TEST(ShapesDataset, BadOptionsThrowNamingTheOption) {
  testing::TempDir dir("shapes_options");
  const ShapesOptions good = small_options(dir.path("out"));
  ShapesOptions bad = good;
  bad.width = 0;
  expect_option_error(bad, "width");
  bad = good;
  bad.height = -3;
  expect_option_error(bad, "height");
  bad = good;
  bad.num_train = -1;
  expect_option_error(bad, "num_train");
  bad = good;
  bad.num_val = -1;
  expect_option_error(bad, "num_val");
  bad = good;
  bad.max_objects = 0;
  expect_option_error(bad, "max_objects");
  bad = good;
  bad.out_dir = "";
  expect_option_error(bad, "out_dir");
  bad = good;
  bad.out_dir = dir.write("a_file", "not a directory") + "/out";
  expect_option_error(bad, "out_dir");
  EXPECT_FALSE(fs::exists(good.out_dir));  // nothing written before the options are checked
}

TEST(ShapesDataset, ZeroImagesGiveEmptySplits) {
  testing::TempDir dir("shapes_empty");
  ShapesOptions options = small_options(dir.path("out"));
  options.num_train = 0;
  options.num_val = 0;
  make_shapes(options);
  for (const std::string split : {"train", "val"}) {
    const Json coco = load_split(options.out_dir, split);
    EXPECT_TRUE(coco.at("images").empty());
    EXPECT_TRUE(coco.at("annotations").empty());
    EXPECT_EQ(coco.at("categories").size(), 3u);
  }
}

}  // namespace
}  // namespace detkit::data

namespace detkit::data {
namespace {

// The triangle keypoints file: the instances file's triangles, same ids and boxes, three corners
// each in the documented order, inside the triangle's box, loadable as a keypoint dataset.
TEST(ShapesDataset, TriangleKeypointsAreTheTrianglesCorners) {
  testing::TempDir dir("shapes_keypoints");
  ShapesOptions options = small_options(dir.path("out"));
  options.num_train = 12;
  make_shapes(options);
  const Json instances = load_split(options.out_dir, "train");
  const Json keypoints =
      Json::parse(read_file(options.out_dir + "/annotations/triangle_keypoints_train.json"));
  ASSERT_EQ(keypoints["categories"].size(), 1u);
  EXPECT_EQ(keypoints["categories"][0]["keypoints"],
            (std::vector<std::string>{"top", "left", "right"}));
  std::map<int, Json> triangles;
  for (const auto& a : instances["annotations"])
    if (a["category_id"] == 2) triangles[a["id"].get<int>()] = a;
  ASSERT_EQ(keypoints["annotations"].size(), triangles.size());
  ASSERT_GT(triangles.size(), 0u);
  int visible = 0, hidden = 0;
  for (const auto& a : keypoints["annotations"]) {
    const Json& t = triangles.at(a["id"].get<int>());
    EXPECT_EQ(a["bbox"], t["bbox"]);
    const auto k = a["keypoints"].get<std::vector<double>>();
    ASSERT_EQ(k.size(), 9u);
    EXPECT_LE(k[1], k[4]);  // top has the smallest y
    EXPECT_LE(k[1], k[7]);
    EXPECT_LE(k[3], k[6]);  // left is left of right
    for (int c = 0; c < 3; ++c) {
      visible += k[3 * c + 2] == 2;
      hidden += k[3 * c + 2] == 1;
      // Corners lie on the triangle's outline, so within a pixel of its visible box when shown.
      if (k[3 * c + 2] != 2) continue;
      const auto b = t["bbox"].get<std::vector<double>>();
      EXPECT_GE(k[3 * c] + 2, b[0]);
      EXPECT_LE(k[3 * c] - 2, b[0] + b[2]);
    }
  }
  EXPECT_EQ(visible + hidden, 3 * static_cast<int>(triangles.size()));
  EXPECT_GT(visible, 0);
}

}  // namespace
}  // namespace detkit::data
