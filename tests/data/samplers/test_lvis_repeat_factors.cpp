// RepeatFactorTrainingSampler's repeat factors on an LVIS dataset (the tiny LVIS fixture) against
// Detectron2's repeat_factors_from_category_frequency over the records of its load_lvis_json
// (tests/parity/oracle_lvis.py), at DATALOADER.REPEAT_THRESHOLD 0.001 (the LVIS zoo files'
// value) and larger ones that repeat images of this 80-image file; with and without
// DATALOADER.FILTER_EMPTY_ANNOTATIONS.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>

#include "detkit/data/catalog.h"
#include "detkit/data/coco/lvis.h"
#include "detkit/data/detection_dataset.h"
#include "detkit/data/samplers/samplers.h"
#include "tests/data/lvis_test_files.h"
#include "tests/parity/oracle.h"

namespace detkit::data {
namespace {

at::Tensor path_bytes(const std::string& s) {
  return at::tensor(std::vector<uint8_t>(s.begin(), s.end()), at::kByte);
}

const std::vector<double> kThresholds = {0.001, 0.02, 0.3};

// Detectron2's factors (T, N) for the fixture, after its empty-image filter when asked.
at::Tensor detectron2_factors(bool filter_empty) {
  const testing::TensorMap want =
      testing::run_oracle("oracle_lvis.py", "repeat",
                          {{"json", path_bytes(testing::lvis_tiny_json())},
                           {"image_root", path_bytes(testing::lvis_tiny_image_root())},
                           {"thresholds", at::tensor(kThresholds, at::kDouble)},
                           {"filter_empty", at::tensor({static_cast<int64_t>(filter_empty)})}});
  return want.at("factors");
}

void expect_factors_equal(const DetectionDataset& dataset, const at::Tensor& want,
                          const char* what) {
  ASSERT_EQ(static_cast<size_t>(want.size(1)), dataset.size()) << what;
  for (size_t t = 0; t < kThresholds.size(); ++t) {
    const std::vector<float> got =
        repeat_factors_from_category_frequency(dataset.image_categories(), kThresholds[t]);
    const at::Tensor row = want[static_cast<int64_t>(t)].contiguous();
    const auto w = row.accessor<float, 1>();
    double max_diff = 0, total = 0;
    size_t repeated = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::abs(got[i] - w[i])));
      total += got[i];
      repeated += got[i] > 1;
    }
    std::cout << "[ lvis repeat ] " << what << ", REPEAT_THRESHOLD " << kThresholds[t] << ": "
              << dataset.size() << " images, " << repeated << " repeated, sum of factors " << total
              << ", largest difference from Detectron2 " << max_diff << "\n";
    EXPECT_EQ(max_diff, 0.0) << what << " at threshold " << kThresholds[t];
  }
}

TEST(LvisRepeatFactors, EqualDetectron2OnTheTinyLvisFile) {
  DETKIT_SKIP_WITHOUT_LVIS_TINY();
  DETKIT_REQUIRE_ORACLE();
  auto loaded = std::make_shared<const CocoDataset>(
      load_lvis_json(testing::lvis_tiny_json(), testing::lvis_tiny_image_root()));
  expect_factors_equal(DetectionDataset({loaded}, {"lvis_v1_val_tiny"}), detectron2_factors(false),
                       "unfiltered");

  // Through the catalog as training reads it: a registered LVIS name, empty images filtered.
  register_lvis_instances("lvis_repeat_factors_tiny", testing::lvis_tiny_json(),
                          testing::lvis_tiny_image_root());
  CocoLoadOptions options;
  options.filter_empty_annotations = true;
  expect_factors_equal(get_detection_dataset({"lvis_repeat_factors_tiny"}, options),
                       detectron2_factors(true), "FILTER_EMPTY_ANNOTATIONS");
}

TEST(LvisRepeatFactors, TheSamplerRepeatsRareImages) {
  DETKIT_SKIP_WITHOUT_LVIS_TINY();
  auto loaded = std::make_shared<const CocoDataset>(
      load_lvis_json(testing::lvis_tiny_json(), testing::lvis_tiny_image_root()));
  const DetectionDataset dataset({loaded}, {"lvis_v1_val_tiny"});
  const std::vector<float> factors =
      repeat_factors_from_category_frequency(dataset.image_categories(), 0.3);
  RepeatFactorTrainingSampler sampler(factors, /*seed=*/3);
  // Over many draws, each image comes about as often as its factor says.
  std::vector<int64_t> seen(dataset.size());
  const int64_t draws = 200000;
  for (int64_t k = 0; k < draws; ++k) ++seen[*sampler.next()];
  double sum = 0;
  for (float f : factors) sum += f;
  double worst = 0;
  for (size_t i = 0; i < factors.size(); ++i) {
    const double expected = draws * factors[i] / sum;
    worst = std::max(worst, std::abs(seen[i] - expected) / expected);
  }
  std::cout << "[ lvis repeat ] sampler: largest relative deviation of an image's draws from its "
               "factor's share: "
            << worst << "\n";
  EXPECT_LT(worst, 0.1);
}

}  // namespace
}  // namespace detkit::data
