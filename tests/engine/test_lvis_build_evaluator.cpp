// build_evaluator for a dataset of evaluator_type "lvis" (Detectron2's train_net.py): an
// LVISEvaluator on the metadata's json_file, capped at TEST.DETECTIONS_PER_IMAGE detections per
// image; no json_file is a named error.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "detkit/config/defaults.h"
#include "detkit/data/coco/coco.h"
#include "detkit/data/metadata.h"
#include "detkit/engine/defaults.h"
#include "detkit/evaluation/lvis_evaluator.h"
#include "tests/support/error_of.h"

namespace detkit::engine {
namespace {

const std::string kLvisGroundTruth =
    std::string(DETKIT_SHARED_DIR) + "/fixtures/lvis_eval/lvis_v1_val_tiny.json";
const std::string kLvisTestImages =
    std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/annotations/instances_val2017.json";

// Two detections of the first annotation's category on its image: a junk box scored 0.9, then
// the annotation's own box scored 0.4. The bbox AP of an evaluator built with `cap`.
double ap_with_cap(const data::DetectionDataset& dataset, int64_t cap) {
  const auto gt = evaluation::load_lvis_ground_truth(kLvisGroundTruth, evaluation::IouType::Bbox);
  const evaluation::EvalObject& a = gt.annotations.front();
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"TEST.DETECTIONS_PER_IMAGE", std::to_string(cap)});
  auto evaluator = build_evaluator(cfg, "detkit_test_lvis_val", dataset, "");
  EXPECT_NE(dynamic_cast<evaluation::LVISEvaluator*>(evaluator.get()), nullptr);
  const evaluation::LvisImage* image = gt.find_image(a.image_id);
  structures::Instances predictions(image->height, image->width);
  const auto& b = a.bbox;
  predictions.set(
      "pred_boxes",
      structures::Boxes(at::tensor(std::vector<float>{1, 1, 3, 3, float(b[0]), float(b[1]),
                                                      float(b[0] + b[2]), float(b[1] + b[3])})
                            .reshape({2, 4})));
  predictions.set("scores", at::tensor(std::vector<float>{0.9f, 0.4f}));
  predictions.set("pred_classes", at::full({2}, a.category_id - 1, at::kLong));
  auto* lvis = dynamic_cast<evaluation::LVISEvaluator*>(evaluator.get());
  lvis->process(a.image_id, predictions);
  return evaluator->evaluate().at("bbox").results.at("AP");
}

TEST(BuildEvaluator, GivesLvisDatasetsAnLVISEvaluatorCappedAtDetectionsPerImage) {
  if (!std::filesystem::exists(kLvisGroundTruth) || !std::filesystem::exists(kLvisTestImages))
    GTEST_SKIP() << "shared fixtures absent: " << kLvisGroundTruth;
  data::Metadata& m = data::global_metadata().get("detkit_test_lvis_val");
  m.evaluator_type = "lvis";
  m.json_file = kLvisGroundTruth;
  // The images the test loader would read (build_evaluator does not use them for LVIS).
  const data::DetectionDataset dataset(
      {std::make_shared<const data::CocoDataset>(data::load_coco_json(kLvisTestImages, ""))},
      {"coco_tiny_val"});
  const double capped = ap_with_cap(dataset, 1);  // only the junk box is kept
  const double uncapped = ap_with_cap(dataset, 300);
  std::cout << "bbox AP with TEST.DETECTIONS_PER_IMAGE 1: " << capped << ", 300: " << uncapped
            << "\n";
  EXPECT_EQ(capped, 0.0);
  EXPECT_GT(uncapped, 0.0);

  data::Metadata& no_file = data::global_metadata().get("detkit_test_lvis_without_json");
  no_file.evaluator_type = "lvis";
  EXPECT_EQ(testing::error_of([&] {
              build_evaluator(config::get_cfg(), "detkit_test_lvis_without_json", dataset, "");
            }),
            "dataset 'detkit_test_lvis_without_json' has evaluator_type 'lvis' but no json_file");
}

}  // namespace
}  // namespace detkit::engine
