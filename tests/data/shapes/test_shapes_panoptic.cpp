// The panoptic variant of the shapes dataset (make_shapes with ShapesOptions::panoptic): its COCO
// panoptic JSON and PNGs agree with each other and with the instances file, its separated
// semantic label maps are what prepare_panoptic_fpn makes of the PNGs, and its built-in names
// are registered as Detectron2 registers COCO's panoptic ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <set>
#include <string>
#include <vector>

#include "detkit/data/catalog.h"
#include "detkit/data/coco/panoptic_dataset.h"
#include "detkit/data/image/panoptic_png_io.h"
#include "detkit/data/metadata.h"
#include "detkit/data/prepare_panoptic_fpn.h"
#include "detkit/data/shapes/shapes.h"
#include "detkit/data/shapes/shapes_panoptic.h"
#include "detkit/data/shapes/shapes_scene.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::TempDir;

ShapesOptions panoptic_options(const std::string& out_dir) {
  ShapesOptions options;
  options.out_dir = out_dir;
  options.num_train = 5;
  options.num_val = 3;
  options.width = 96;
  options.height = 80;
  options.seed = 11;
  options.panoptic = true;
  return options;
}

std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(fs::relative(entry.path(), dir).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ShapesPanoptic, PngIdsSegmentsAndInstancesAgree) {
  TempDir dir("shapes_panoptic");
  const ShapesOptions options = panoptic_options(dir.path("out"));
  make_shapes(options);
  std::set<int64_t> stuff_seen;
  for (const std::string split : {"train", "val"}) {
    const std::string out = options.out_dir;
    const PanopticDataset ds =
        load_coco_panoptic_json(out + "/annotations/panoptic_" + split + ".json", out + "/" + split,
                                out + "/panoptic_" + split);
    ASSERT_EQ(ds.num_images(), split == "train" ? 5u : 3u);
    ASSERT_EQ(ds.categories().size(), 6u);
    for (const PanopticCategory& c : ds.categories()) EXPECT_EQ(c.isthing, c.id <= 3) << c.name;
    EXPECT_EQ(ds.categories()[3].name, "stripes");
    EXPECT_EQ(ds.categories()[4].name, "checks");
    EXPECT_EQ(ds.categories()[5].name, "grain");
    const Json instances =
        Json::parse(read_file(out + "/annotations/instances_" + split + ".json"));
    std::map<int64_t, std::vector<Json>> instances_of;
    for (const Json& a : instances.at("annotations"))
      instances_of[a.at("image_id").get<int64_t>()].push_back(a);

    for (size_t i = 0; i < ds.num_images(); ++i) {
      const PanopticImageView image = ds.image(i);
      SCOPED_TRACE(image.pan_seg_path);
      EXPECT_TRUE(fs::exists(image.image_path)) << image.image_path;
      const cv::Mat ids = read_panoptic_ids(image.pan_seg_path);
      ASSERT_EQ(ids.rows, options.height);
      ASSERT_EQ(ids.cols, options.width);
      // Pixel count and extent of every id in the PNG.
      std::map<int64_t, std::array<int64_t, 5>> found;  // area, x0, y0, x1, y1
      for (int y = 0; y < ids.rows; ++y) {
        for (int x = 0; x < ids.cols; ++x) {
          auto [it, fresh] =
              found.try_emplace(ids.at<int32_t>(y, x), std::array<int64_t, 5>{0, x, y, x, y});
          auto& f = it->second;
          ++f[0];
          f[1] = std::min<int64_t>(f[1], x), f[2] = std::min<int64_t>(f[2], y);
          f[3] = std::max<int64_t>(f[3], x), f[4] = std::max<int64_t>(f[4], y);
        }
      }
      EXPECT_EQ(found.count(0), 0u) << "void pixels";
      std::vector<const PanopticSegment*> things;
      ASSERT_EQ(found.size(), image.segments.size);
      for (const PanopticSegment& s : image.segments) {
        ASSERT_EQ(found.count(s.id), 1u) << "segment " << s.id << " has no pixels";
        const auto& f = found.at(s.id);
        EXPECT_EQ(s.area, static_cast<double>(f[0])) << "segment " << s.id;
        EXPECT_EQ(s.bbox,
                  (std::array<double, 4>{static_cast<double>(f[1]), static_cast<double>(f[2]),
                                         static_cast<double>(f[3] - f[1] + 1),
                                         static_cast<double>(f[4] - f[2] + 1)}));
        EXPECT_FALSE(s.iscrowd);
        if (s.isthing) {
          EXPECT_TRUE(s.category_id >= 1 && s.category_id <= 3) << s.category_id;
          things.push_back(&s);
        } else {
          EXPECT_TRUE(s.category_id >= 4 && s.category_id <= 6) << s.category_id;
          stuff_seen.insert(s.category_id);
        }
      }
      // One thing segment per instance annotation, in order, of its category and area (the
      // polygons rasterise to exactly the visible pixels).
      const std::vector<Json>& annotations = instances_of[image.id];
      ASSERT_EQ(things.size(), annotations.size());
      for (size_t k = 0; k < things.size(); ++k) {
        EXPECT_EQ(things[k]->category_id, annotations[k].at("category_id").get<int64_t>());
        EXPECT_EQ(things[k]->area, annotations[k].at("area").get<double>());
      }
    }
  }
  EXPECT_EQ(stuff_seen, (std::set<int64_t>{4, 5, 6})) << "every texture somewhere";
}

TEST(ShapesPanoptic, SemanticMapsAreWhatPreparePanopticFpnMakes) {
  TempDir dir("shapes_panoptic_semantic");
  const ShapesOptions options = panoptic_options(dir.path("out"));
  make_shapes(options);
  for (const std::string split : {"train", "val"}) {
    const std::string out = options.out_dir;
    const std::string oracle = dir.path("oracle_" + split);
    ASSERT_EQ(prepare_panoptic_fpn(out + "/annotations/panoptic_" + split + ".json",
                                   out + "/panoptic_" + split, oracle),
              split == "train" ? 5u : 3u);
    const std::vector<std::string> names = files_under(oracle);
    EXPECT_EQ(names, files_under(out + "/panoptic_stuff_" + split));
    for (const std::string& name : names) {
      const cv::Mat expected = cv::imread(oracle + "/" + name, cv::IMREAD_UNCHANGED);
      const cv::Mat written =
          cv::imread(out + "/panoptic_stuff_" + split + "/" + name, cv::IMREAD_UNCHANGED);
      ASSERT_EQ(written.type(), CV_8U) << name;
      ASSERT_EQ(written.size(), expected.size()) << name;
      EXPECT_EQ(cv::countNonZero(written != expected), 0) << name;
      double lo = 0, hi = 0;
      cv::minMaxLoc(written, &lo, &hi);
      EXPECT_LE(hi, 3) << name << ": labels 0 (shapes) and 1..3 (stuff), no void";
    }
  }
}

TEST(ShapesPanoptic, DeterministicAndOnlyWhenAsked) {
  TempDir dir("shapes_panoptic_determinism");
  ShapesOptions one = panoptic_options(dir.path("one"));
  one.num_workers = 1;
  ShapesOptions three = panoptic_options(dir.path("three"));
  three.num_workers = 3;
  make_shapes(one);
  make_shapes(three);
  const std::vector<std::string> files = files_under(one.out_dir);
  ASSERT_EQ(files, files_under(three.out_dir));
  for (const std::string& f : files)
    EXPECT_EQ(read_file(one.out_dir + "/" + f), read_file(three.out_dir + "/" + f)) << f;
  EXPECT_TRUE(std::count(files.begin(), files.end(), "annotations/panoptic_val.json"));
  EXPECT_TRUE(std::count(files.begin(), files.end(), "panoptic_train/000005.png"));
  EXPECT_TRUE(std::count(files.begin(), files.end(), "panoptic_stuff_val/000003.png"));

  // Without the option: the instance dataset alone, its images not the stuff ones.
  ShapesOptions plain = panoptic_options(dir.path("plain"));
  plain.panoptic = false;
  make_shapes(plain);
  const std::vector<std::string> plain_files = files_under(plain.out_dir);
  for (const std::string& f : plain_files) EXPECT_EQ(f.find("panoptic"), std::string::npos) << f;
  EXPECT_NE(read_file(plain.out_dir + "/train/000001.jpg"),
            read_file(one.out_dir + "/train/000001.jpg"));
}

TEST(ShapesPanoptic, SceneWithoutStuffIsAnError) {
  SceneOptions options;
  options.width = 64;
  options.height = 48;
  const ShapesScene plain = render_scene(3, options);
  EXPECT_TRUE(plain.stuff.empty());
  testing::expect_contains(testing::error_of([&] { panoptic_scene(plain); }),
                           "panoptic_scene: the scene has no stuff map");
  options.stuff = true;
  const ShapesScene stuffed = render_scene(3, options);
  ASSERT_EQ(stuffed.stuff.size(), stuffed.image.size());
  const ShapesPanoptic panoptic = panoptic_scene(stuffed);
  int64_t total = 0;
  for (const ShapesSegment& s : panoptic.segments) total += s.area;
  EXPECT_EQ(total, 64 * 48);
}

TEST(ShapesPanoptic, BuiltinNamesAsCocosPanopticOnes) {
  const DatasetCatalog catalog;
  const std::string root = "/data/sets";
  for (const std::string split : {"train", "val"}) {
    const std::string prefix = "shapes_" + split + "_panoptic";
    const DatasetFiles separated = catalog.get(prefix + "_separated", root);
    EXPECT_EQ(separated.kind, DatasetKind::kCocoPanopticSeparated);
    EXPECT_EQ(separated.json_file,
              root + "/shapes_panoptic/annotations/instances_" + split + ".json");
    EXPECT_EQ(separated.image_root, root + "/shapes_panoptic/" + split);
    EXPECT_EQ(separated.sem_seg_root, root + "/shapes_panoptic/panoptic_stuff_" + split);
    EXPECT_EQ(separated.panoptic_root, root + "/shapes_panoptic/panoptic_" + split);
    EXPECT_EQ(separated.panoptic_json,
              root + "/shapes_panoptic/annotations/panoptic_" + split + ".json");
    const DatasetFiles stuffonly = catalog.get(prefix + "_stuffonly", root);
    EXPECT_EQ(stuffonly.kind, DatasetKind::kSemSeg);
    EXPECT_EQ(stuffonly.sem_seg_root, separated.sem_seg_root);
    const DatasetFiles standard = catalog.get(prefix, root);
    EXPECT_EQ(standard.kind, DatasetKind::kCocoPanoptic);
    EXPECT_EQ(standard.json_file, separated.json_file);
    EXPECT_EQ(standard.panoptic_root, separated.panoptic_root);
  }

  const Metadata& separated = global_metadata().get("shapes_val_panoptic_separated");
  EXPECT_EQ(separated.evaluator_type, "coco_panoptic_seg");
  EXPECT_EQ(separated.ignore_label, 255);
  EXPECT_EQ(separated.thing_classes, (std::vector<std::string>{"circle", "triangle", "rectangle"}));
  EXPECT_EQ(separated.stuff_classes,
            (std::vector<std::string>{"things", "stripes", "checks", "grain"}));
  EXPECT_EQ(separated.stuff_dataset_ids, (std::vector<int64_t>{0, 4, 5, 6}));
  EXPECT_EQ(global_metadata().get("shapes_train_panoptic_stuffonly").evaluator_type, "sem_seg");
  const Metadata& standard = global_metadata().get("shapes_train_panoptic");
  EXPECT_EQ(standard.label_divisor, 1000);
  EXPECT_EQ(standard.stuff_classes, (std::vector<std::string>{"circle", "triangle", "rectangle",
                                                              "stripes", "checks", "grain"}));
}

}  // namespace
}  // namespace detkit::data
