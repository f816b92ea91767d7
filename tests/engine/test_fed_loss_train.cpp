// Training with the federated sigmoid loss of LVIS configs (MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE,
// USE_FED_LOSS) through DefaultTrainer, on the tiny shapes dataset: without class_image_count in
// the train dataset's metadata the trainer is refused with the dataset and the key named; with
// it, a step trains (finite loss_cls), and the checkpoint carries Detectron2's buffer of class
// weights (image count ** FED_LOSS_FREQ_WEIGHT_POWER).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "detkit/data/metadata.h"
#include "detkit/engine/defaults.h"
#include "detkit/engine/event_storage.h"
#include "detkit/engine/trainer.h"
#include "tests/support/error_of.h"
#include "tests/support/tiny_shapes.h"

namespace detkit::engine {
namespace {

TEST(FedLossTrain, OneStepOnTinyShapesWithClassImageCounts) {
  testing::TinySetup setup("fed_loss_train");
  config::CfgNode cfg = testing::tiny_config(setup, "fed_loss_train");
  cfg.merge_from_list({"SOLVER.MAX_ITER", "1", "MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE", "True",
                       "MODEL.ROI_BOX_HEAD.USE_FED_LOSS", "True",
                       "MODEL.ROI_BOX_HEAD.FED_LOSS_NUM_CLASSES", "2",
                       "MODEL.ROI_BOX_HEAD.FED_LOSS_FREQ_WEIGHT_POWER", "0.25"});
  const uint64_t seed = default_setup(cfg);
  ensure_builtin_datasets(cfg);
  const std::string message = testing::error_of([&] { DefaultTrainer refused(cfg, seed); });
  std::cout << "[ fed loss train ] without counts: " << message << "\n";
  testing::expect_contains(message, "'fed_loss_train_train'");
  testing::expect_contains(message, "MODEL.ROI_BOX_HEAD.USE_FED_LOSS");

  const std::vector<int64_t> counts = {3, 16, 1};
  data::global_metadata().get("fed_loss_train_train").class_image_count = counts;
  DefaultTrainer trainer(cfg, seed);
  const auto buffers = trainer.model()->named_buffers();
  ASSERT_TRUE(buffers.contains("roi_heads.box_predictor.fed_loss_cls_weights"));
  const at::Tensor weights = buffers["roi_heads.box_predictor.fed_loss_cls_weights"];
  for (size_t c = 0; c < counts.size(); ++c)
    EXPECT_FLOAT_EQ(weights[c].item<float>(), std::pow(static_cast<float>(counts[c]), 0.25f));
  trainer.resume_or_load(false);
  trainer.train();
  const EventStorage& storage = trainer.trainer()->storage();
  ASSERT_TRUE(storage.has("loss_cls"));
  const double loss_cls = storage.latest("loss_cls").first;
  std::cout << "[ fed loss train ] loss_cls " << loss_cls << "\n";
  EXPECT_TRUE(std::isfinite(loss_cls));
  EXPECT_GT(loss_cls, 0.0);
}

}  // namespace
}  // namespace detkit::engine
