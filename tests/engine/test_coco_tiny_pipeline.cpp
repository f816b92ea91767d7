// detkit's own pipeline on real coco_tiny images against Detectron2: decode + test mapping give
// the fixture's input tensors, and the fixture weights then give Detectron2's detections; a few
// tens of training iterations on the fixture's training images lower every loss.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/config/defaults.h"
#include "detkit/data/coco/coco.h"
#include "detkit/data/dataset_mapper.h"
#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/solver/build.h"
#include "tests/modeling/meta_arch/fixture_targets.h"
#include "tests/support/detectron2_fixture.h"
#include "tests/support/matched_sets.h"

namespace detkit::engine {

TEST(CocoTinyPipeline, DecodedAndMappedImagesGiveDetectron2Detections) {
  testing::Detectron2Fixture fx;
  if (!fx.present()) GTEST_SKIP() << "fixture absent: " << fx.dir;
  auto cfg = fx.config();
  const std::string root = std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/";
  data::CocoDataset val =
      data::load_coco_json(root + "annotations/instances_val2017.json", root + "val2017");
  nlohmann::json meta = nlohmann::json::parse(std::ifstream(fx.dir + "outputs.json"));
  data::DatasetMapper mapper(data::dataset_mapper_options_from_config(cfg, /*is_train=*/false));
  auto model = modeling::build_model(cfg);
  model->eval();
  ASSERT_TRUE(checkpoint::load_state_dict(*model, fx.weights()).complete());
  // Mapped as one batch of both images, as Detectron2 ran them (padding depends on the batch).
  std::vector<modeling::ModelInput> batch;
  for (int i = 0; i < 2; ++i) {
    auto index = val.find_image(meta["images"][i]["image_id"].get<int64_t>());
    ASSERT_TRUE(index.has_value());
    data::SampleRng rng(0, i);
    batch.push_back(mapper(val, *index, rng));
    at::Tensor want = fx.outputs().at("input_tensor_" + std::to_string(i));
    ASSERT_EQ(batch.back().image.sizes(), want.sizes());
    double pixel_diff = (batch.back().image - want).abs().max().item<double>();
    std::cout << "[ coco_tiny ] image " << meta["images"][i]["image_id"]
              << ": decoded and mapped input, max abs diff " << pixel_diff << "\n";
    EXPECT_EQ(pixel_diff, 0.0);  // OpenCV decode and PIL-exact resize
  }
  at::NoGradGuard no_grad;
  auto results = model->inference(batch);
  for (int i = 0; i < 2; ++i) {
    const auto& result = results.at(i);
    at::Tensor want_boxes = fx.outputs().at("pred_boxes_" + std::to_string(i));
    const std::string s = std::to_string(i);
    const auto m = testing::match_sets(
        {result.boxes("pred_boxes").tensor(), result.tensor("scores"),
         result.tensor("pred_classes")},
        {want_boxes, fx.outputs().at("scores_" + s), fx.outputs().at("pred_classes_" + s)},
        /*box_tol=*/1e-3, /*score_tol=*/1e-4);
    std::cout << "[ coco_tiny ] image " << meta["images"][i]["image_id"] << ": " << result.size()
              << " detections vs " << want_boxes.size(0) << ": " << m.summary() << "\n";
    EXPECT_EQ(result.size(), want_boxes.size(0));
    EXPECT_EQ(m.unexplained, 0);
    EXPECT_LE(m.unmatched_reference.size(), static_cast<size_t>(want_boxes.size(0) / 50));
  }
}

TEST(CocoTinyPipeline, TinyModelOverfitsTwoImages) {
  testing::Detectron2Fixture fx;
  if (!fx.present()) GTEST_SKIP() << "fixture absent: " << fx.dir;
  // A tiny Mask R-CNN from scratch (GroupNorm, as Detectron2's scratch recipes) on the fixture's
  // two real coco_tiny training images.
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(std::string(DETKIT_SOURCE_DIR) + "/configs/Base-RCNN-FPN.yaml");
  cfg.merge_from_list({"MODEL.MASK_ON",
                       "True",
                       "MODEL.RESNETS.DEPTH",
                       "18",
                       "MODEL.RESNETS.RES2_OUT_CHANNELS",
                       "64",
                       "MODEL.RESNETS.STEM_OUT_CHANNELS",
                       "32",
                       "MODEL.RESNETS.NORM",
                       "GN",
                       "MODEL.RESNETS.STRIDE_IN_1X1",
                       "False",
                       "MODEL.BACKBONE.FREEZE_AT",
                       "0",
                       "MODEL.FPN.OUT_CHANNELS",
                       "64",
                       "MODEL.ROI_BOX_HEAD.FC_DIM",
                       "128",
                       "MODEL.ROI_MASK_HEAD.CONV_DIM",
                       "64",
                       "MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE",
                       "128",
                       "SOLVER.BASE_LR",
                       "0.01",
                       "SOLVER.WARMUP_ITERS",
                       "0",
                       "SOLVER.MAX_ITER",
                       "100"});
  at::manual_seed(0);
  auto model = modeling::build_model(cfg);
  model->train();
  auto batch = testing::fixture_training_batch(fx);
  auto optimizer = solver::build_optimizer(cfg, *model);
  std::vector<double> totals;
  std::map<std::string, double> first, last;
  const int iterations = 25;
  for (int it = 0; it < iterations; ++it) {
    auto losses = model->losses(batch);
    at::Tensor total = at::zeros({});
    for (auto& [name, loss] : losses) {
      double v = loss.item<double>();
      ASSERT_TRUE(std::isfinite(v)) << name << " at iteration " << it;
      (it == 0 ? first : last)[name] = v;
      total = total + loss;
    }
    totals.push_back(total.item<double>());
    optimizer->zero_grad();
    total.backward();
    optimizer->step();
  }
  for (const auto& [name, v] : first)
    std::cout << "[ overfit ] " << name << ": " << v << " -> " << last[name] << "\n";
  double start = (totals[0] + totals[1] + totals[2]) / 3;
  double end = (totals[iterations - 1] + totals[iterations - 2] + totals[iterations - 3]) / 3;
  std::cout << "[ overfit ] total loss, mean of first 3 " << start << " -> last 3 " << end << "\n";
  EXPECT_LT(end, 0.7 * start);
  EXPECT_LT(last["loss_cls"], first["loss_cls"]);
  EXPECT_LT(last["loss_mask"], first["loss_mask"]);
}

}  // namespace detkit::engine
