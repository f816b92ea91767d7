// Every coco_tiny image (both splits) through detkit's test-time mapper, the one `--eval-only`
// runs (read_image: TurboJPEG or OpenCV; ResizeShortestEdge; PIL's bilinear resize re-written),
// against Detectron2's DatasetMapper(cfg, is_train=False) re-written with PIL
// (tests/parity/oracle_preprocessing.py), at the fixtures' test size (320/480) and at Detectron2's
// default (800/1333): the same size and the same bytes. Prints the images that differ, if any.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "detkit/data/coco/coco.h"
#include "detkit/data/dataset_mapper.h"
#include "tests/data/coco_test_files.h"
#include "tests/parity/oracle.h"

namespace detkit::data {
namespace {

struct TestSize {
  int64_t short_edge, max_size;
};
void PrintTo(const TestSize& size, std::ostream* out) {
  *out << size.short_edge << "/" << size.max_size;
}

class TestMappingVsPil : public ::testing::TestWithParam<TestSize> {};

TEST_P(TestMappingVsPil, EveryCocoTinyImageMapsToDetectron2sBytes) {
  DETKIT_SKIP_WITHOUT_COCO_TINY();
  DETKIT_REQUIRE_ORACLE();
  const TestSize size = GetParam();
  DatasetMapperOptions options;
  options.is_train = false;
  options.augmentations.push_back(
      std::make_shared<ResizeShortestEdge>(std::vector<int64_t>{size.short_edge}, size.max_size));
  const DatasetMapper mapper(options);
  constexpr size_t kChunk = 20;  // images per oracle call (its output is held in memory)
  size_t compared = 0;
  std::vector<std::string> differing;
  double worst = 0;
  for (const std::string split : {"val2017", "train2017"}) {
    const CocoDataset dataset =
        load_coco_json(testing::coco_tiny_json(split), testing::coco_tiny_images(split));
    for (size_t first = 0; first < dataset.num_images(); first += kChunk) {
      const size_t last = std::min(dataset.num_images(), first + kChunk);
      std::string paths;
      for (size_t i = first; i < last; ++i)
        paths += (i == first ? "" : "|") + dataset.image_path(i);
      const testing::TensorMap want = testing::run_oracle(
          "oracle_preprocessing.py",
          std::to_string(size.short_edge) + ":" + std::to_string(size.max_size) + ":BGR:" + paths,
          {});
      for (size_t i = first; i < last; ++i) {
        const std::string k = std::to_string(i - first);
        SampleRng rng(0, i);
        const structures::ModelInput got = mapper(dataset, i, rng);
        const at::Tensor expected = want.at("image#" + k).to(at::kFloat);
        const auto original = want.at("size#" + k);
        EXPECT_EQ(got.height, original[0].item<int64_t>()) << dataset.image_path(i);
        EXPECT_EQ(got.width, original[1].item<int64_t>()) << dataset.image_path(i);
        ++compared;
        if (got.image.sizes() != expected.sizes()) {
          differing.push_back(dataset.image_path(i) + " (mapped size differs)");
          continue;
        }
        const double diff = (got.image - expected).abs().max().item<double>();
        worst = std::max(worst, diff);
        if (diff != 0)
          differing.push_back(dataset.image_path(i) + " (max abs diff " + std::to_string(diff) +
                              ")");
      }
    }
  }
  std::cout << "[ preprocessing " << size.short_edge << "/" << size.max_size << " ] " << compared
            << " coco_tiny images vs Detectron2's mapper (PIL): " << differing.size()
            << " differ, max abs diff " << worst << "\n";
  for (const auto& d : differing) std::cout << "  " << d << "\n";
  EXPECT_EQ(compared, 160u);
  EXPECT_TRUE(differing.empty());
}

INSTANTIATE_TEST_SUITE_P(Sizes, TestMappingVsPil,
                         ::testing::Values(TestSize{320, 480}, TestSize{800, 1333}),
                         [](const auto& info) {
                           return "Short" + std::to_string(info.param.short_edge);
                         });

}  // namespace
}  // namespace detkit::data
