// Every real coco_tiny image decodes at its JSON size and maps; the mapped targets count what the
// JSON holds (non-crowd annotations, their polygons), read independently with nlohmann_json.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/data/coco/coco.h"
#include "detkit/data/dataset_mapper.h"
#include "tests/data/coco_test_files.h"

namespace detkit::data {
namespace {

using nlohmann::json;

class CocoTinyMapping : public ::testing::TestWithParam<std::string> {};

TEST_P(CocoTinyMapping, AllImagesMapWithTheJsonsCounts) {
  DETKIT_SKIP_WITHOUT_COCO_TINY();
  const std::string split = GetParam();
  std::ifstream in(testing::coco_tiny_json(split));
  const json expected = json::parse(in);
  size_t non_crowd = 0, polygons = 0;
  for (const json& a : expected["annotations"]) {
    if (a.value("iscrowd", 0) != 0) continue;
    ++non_crowd;
    polygons += a["segmentation"].size();  // coco_tiny: every non-crowd mask is polygons
  }

  CocoDataset dataset =
      load_coco_json(testing::coco_tiny_json(split), testing::coco_tiny_images(split));
  ASSERT_EQ(dataset.num_images(), expected["images"].size());
  DatasetMapperOptions options;  // no augmentation: the original frame
  options.mask_format = MaskFormat::kPolygon;
  DatasetMapper mapper(options);
  size_t instances = 0, mapped_polygons = 0;
  for (size_t i = 0; i < dataset.num_images(); ++i) {
    SampleRng rng(0, i);
    structures::ModelInput input = mapper(dataset, i, rng);
    EXPECT_EQ(input.image.size(0), 3);
    EXPECT_EQ(input.image.size(1), dataset.image(i).height);
    EXPECT_EQ(input.image.size(2), dataset.image(i).width);
    instances += input.instances->size();
    for (const auto& instance : input.instances->polygon_masks("gt_masks").polygons()) {
      mapped_polygons += instance.size();
    }
  }
  EXPECT_EQ(instances, non_crowd);
  EXPECT_EQ(mapped_polygons, polygons);
}

INSTANTIATE_TEST_SUITE_P(Splits, CocoTinyMapping, ::testing::Values("train2017", "val2017"));

}  // namespace
}  // namespace detkit::data
