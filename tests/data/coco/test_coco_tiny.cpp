// load_coco_json on the real coco_tiny slice of COCO 2017, checked against the same files read
// independently with nlohmann_json, and the masks against pycocotools' numbers in fixtures.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "detkit/data/coco/coco.h"
#include "detkit/data/training_targets.h"
#include "detkit/structures/mask_ops.h"
#include "detkit/utils/error.h"
#include "tests/data/coco_test_files.h"

namespace detkit::data {
namespace {

using nlohmann::json;
using testing::coco_tiny_images;
using testing::coco_tiny_json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// What a loader keeps of an annotation, by Detectron2's rules.
bool polygon_is_valid(const json& polygon) {
  return polygon.size() >= 6 && polygon.size() % 2 == 0;
}
bool annotation_is_kept(const json& a) {
  const json& segm = a.value("segmentation", json());
  if (!segm.is_array() || segm.empty()) return true;
  return std::any_of(segm.begin(), segm.end(), polygon_is_valid);
}

class CocoTinyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    DETKIT_SKIP_WITHOUT_COCO_TINY();
    expected_ = read_json(coco_tiny_json(GetParam()));
    ds_ = load_coco_json(coco_tiny_json(GetParam()), coco_tiny_images(GetParam()));
  }
  json expected_;
  CocoDataset ds_;
};

TEST_P(CocoTinyTest, CountsMatchTheJson) {
  size_t crowd = 0, kept = 0, dropped_polygons = 0;
  for (const json& a : expected_["annotations"]) {
    if (!annotation_is_kept(a)) continue;
    ++kept;
    crowd += a.value("iscrowd", 0);
    if (a["segmentation"].is_array()) {
      for (const json& p : a["segmentation"]) dropped_polygons += !polygon_is_valid(p);
    }
  }
  EXPECT_EQ(ds_.num_images(), expected_["images"].size());
  EXPECT_EQ(ds_.num_annotations(), kept);
  EXPECT_EQ(ds_.num_crowd(), crowd);
  EXPECT_GT(crowd, 0u);  // coco_tiny has crowd regions; the test would be weaker without them
  EXPECT_EQ(ds_.num_classes(), expected_["categories"].size());
  EXPECT_EQ(ds_.stats().dropped_polygons, dropped_polygons);
  EXPECT_EQ(ds_.stats().dropped_annotations, expected_["annotations"].size() - kept);
  EXPECT_TRUE(check_coco_json(coco_tiny_json(GetParam()), coco_tiny_images(GetParam())).empty());
}

TEST_P(CocoTinyTest, ImagesAreSortedByIdWithTheirFields) {
  std::map<int64_t, json> by_id;
  for (const json& image : expected_["images"]) by_id[image["id"].get<int64_t>()] = image;
  ASSERT_EQ(ds_.num_images(), by_id.size());
  size_t i = 0;
  for (const auto& [id, image] : by_id) {
    ImageView view = ds_.image(i);
    EXPECT_EQ(view.index, i);
    EXPECT_EQ(view.id, id);
    EXPECT_EQ(view.file_name, image["file_name"].get<std::string>());
    EXPECT_EQ(view.height, image["height"].get<int>());
    EXPECT_EQ(view.width, image["width"].get<int>());
    EXPECT_EQ(ds_.image_path(i),
              coco_tiny_images(GetParam()) + "/" + image["file_name"].get<std::string>());
    EXPECT_TRUE(std::filesystem::exists(ds_.image_path(i))) << ds_.image_path(i);
    EXPECT_EQ(ds_.find_image(id), i);
    ++i;
  }
  EXPECT_FALSE(ds_.find_image(-5).has_value());
}

TEST_P(CocoTinyTest, AnnotationsAreGroupedByImageInFileOrderWithExactValues) {
  std::map<int64_t, std::vector<json>> by_image;
  for (const json& a : expected_["annotations"]) {
    if (annotation_is_kept(a)) by_image[a["image_id"].get<int64_t>()].push_back(a);
  }
  for (size_t i = 0; i < ds_.num_images(); ++i) {
    const std::vector<json>& expected = by_image[ds_.image(i).id];
    AnnotationRange range = ds_.annotations_of(i);
    ASSERT_EQ(range.size(), expected.size()) << "image id " << ds_.image(i).id;
    size_t k = 0;
    for (AnnotationView a : range) {
      const json& e = expected[k++];
      EXPECT_EQ(a.id(), e["id"].get<int64_t>());
      EXPECT_EQ(a.image_index(), i);
      EXPECT_EQ(a.category_id(), e["category_id"].get<int64_t>());
      EXPECT_EQ(a.iscrowd(), e.value("iscrowd", 0) == 1);
      EXPECT_EQ(a.area(), e["area"].get<double>());
      auto bbox = a.bbox();
      for (int c = 0; c < 4; ++c) EXPECT_EQ(bbox[c], e["bbox"][c].get<double>());
      const json& segm = e["segmentation"];
      if (segm.is_object()) {
        EXPECT_EQ(a.segmentation_kind(), SegmentationKind::kRle);
        mask_ops::RLE rle = a.rle();
        EXPECT_EQ(rle.h, segm["size"][0].get<int64_t>());
        EXPECT_EQ(rle.w, segm["size"][1].get<int64_t>());
        ASSERT_TRUE(segm["counts"].is_array());
        EXPECT_EQ(std::vector<uint32_t>(rle.counts.begin(), rle.counts.end()),
                  segm["counts"].get<std::vector<uint32_t>>());
      } else {
        EXPECT_EQ(a.segmentation_kind(), SegmentationKind::kPolygons);
        std::vector<std::vector<double>> kept;
        for (const json& p : segm) {
          if (polygon_is_valid(p)) kept.push_back(p.get<std::vector<double>>());
        }
        EXPECT_EQ(a.polygons(), kept) << "annotation id " << a.id();
      }
    }
  }
}

TEST_P(CocoTinyTest, CategoriesAreContiguousInIdOrder) {
  std::map<int64_t, std::string> names;
  for (const json& c : expected_["categories"]) names[c["id"].get<int64_t>()] = c["name"];
  ASSERT_EQ(ds_.num_classes(), names.size());
  int index = 0;
  for (const auto& [id, name] : names) {
    EXPECT_EQ(ds_.categories()[index].id, id);
    EXPECT_EQ(ds_.categories()[index].name, name);
    EXPECT_EQ(ds_.class_names()[index], name);
    EXPECT_EQ(ds_.category_id_of(index), id);
    EXPECT_EQ(ds_.index_of(id), index);
    ++index;
  }
  EXPECT_NE(ds_.category_id_of(static_cast<int>(names.size()) - 1),
            static_cast<int64_t>(names.size()));  // COCO ids have gaps: 80 classes up to id 90
  for (size_t a = 0; a < ds_.num_annotations(); ++a) {
    AnnotationView view = ds_.annotation(a);
    EXPECT_EQ(ds_.category_id_of(view.class_index()), view.category_id());
  }
  EXPECT_THROW(ds_.index_of(12), Error);  // a gap in COCO's ids
  EXPECT_THROW(ds_.category_id_of(static_cast<int>(names.size())), Error);
}

TEST_P(CocoTinyTest, MasksMatchPycocotools) {
  json fixture =
      read_json(std::string(DETKIT_SHARED_DIR) + "/fixtures/coco_masks/" + GetParam() + ".json");
  std::map<int64_t, size_t> index_of_id;
  for (size_t a = 0; a < ds_.num_annotations(); ++a) index_of_id[ds_.annotation(a).id()] = a;
  size_t checked = 0, rle_checked = 0;
  for (const json& expected : fixture["annotations"]) {
    auto it = index_of_id.find(expected["id"].get<int64_t>());
    ASSERT_NE(it, index_of_id.end()) << "annotation id " << expected["id"];
    AnnotationView a = ds_.annotation(it->second);
    mask_ops::RLE rle = a.mask_rle();
    EXPECT_EQ(rle.h, expected["size"][0].get<int64_t>());
    EXPECT_EQ(rle.w, expected["size"][1].get<int64_t>());
    EXPECT_EQ(mask_ops::area(rle), expected["area"].get<uint64_t>()) << "annotation id " << a.id();
    EXPECT_EQ(mask_ops::to_string(rle), expected["counts"].get<std::string>());
    auto box = mask_ops::to_bbox(rle);
    for (int c = 0; c < 4; ++c) EXPECT_EQ(box[c], expected["bbox"][c].get<double>());
    ++checked;
    rle_checked += a.segmentation_kind() == SegmentationKind::kRle;
  }
  EXPECT_EQ(checked, ds_.num_annotations());
  EXPECT_EQ(rle_checked, ds_.num_crowd());
}

TEST_P(CocoTinyTest, FilteringRemovesImagesWithoutNonCrowdAnnotations) {
  std::set<int64_t> usable;
  for (const json& a : expected_["annotations"]) {
    if (annotation_is_kept(a) && a.value("iscrowd", 0) == 0)
      usable.insert(a["image_id"].get<int64_t>());
  }
  size_t expected_removed = expected_["images"].size() - usable.size();
  CocoLoadOptions options;
  options.filter_empty_annotations = true;
  CocoDataset filtered = load_coco_json(coco_tiny_json(GetParam()), "", options);
  EXPECT_EQ(filtered.stats().filtered_images, expected_removed);
  ASSERT_EQ(filtered.num_images(), usable.size());
  size_t annotations = 0;
  for (size_t i = 0; i < filtered.num_images(); ++i) {
    EXPECT_TRUE(usable.count(filtered.image(i).id));
    annotations += filtered.annotations_of(i).size();
    // The same annotations as unfiltered, crowd included.
    size_t original = *ds_.find_image(filtered.image(i).id);
    EXPECT_EQ(filtered.annotations_of(i).size(), ds_.annotations_of(original).size());
  }
  EXPECT_EQ(annotations, filtered.num_annotations());
  EXPECT_EQ(filter_empty_annotations(filtered), 0u);  // idempotent
}

TEST_P(CocoTinyTest, TrainingTargetsExcludeCrowd) {
  size_t targets = 0;
  for (size_t i = 0; i < ds_.num_images(); ++i) {
    std::vector<InstanceAnnotation> objects = training_targets(ds_, i);
    size_t non_crowd = 0;
    for (AnnotationView a : ds_.annotations_of(i)) non_crowd += !a.iscrowd();
    ASSERT_EQ(objects.size(), non_crowd);
    size_t k = 0;
    for (AnnotationView a : ds_.annotations_of(i)) {
      if (a.iscrowd()) continue;
      const InstanceAnnotation& t = objects[k++];
      EXPECT_EQ(t.annotation_id, a.id());
      EXPECT_EQ(t.class_index, a.class_index());
      auto [x, y, w, h] = a.bbox();
      EXPECT_EQ(t.box_xyxy, (std::array<double, 4>{x, y, x + w, y + h}));
      EXPECT_EQ(t.polygons, a.polygons());
    }
    targets += objects.size();
  }
  EXPECT_EQ(targets, ds_.num_annotations() - ds_.num_crowd());
}

INSTANTIATE_TEST_SUITE_P(Splits, CocoTinyTest, ::testing::Values("train2017", "val2017"));

}  // namespace
}  // namespace detkit::data
