// The LVIS v1 zoo file (configs/LVISv1-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml) trains on
// an LVIS file: the tiny LVIS fixture registered as DETKIT_DATASETS_REGISTER's
// name=lvis:<json>:<image root> entry, read through the file's own data settings
// (RepeatFactorTrainingSampler, REPEAT_THRESHOLD 0.001, FILTER_EMPTY_ANNOTATIONS), two iterations
// at 64 px, one image per batch, one thread, no weights, a small clipped LR. NUM_CLASSES is the
// fixture's 80 (LVIS v1 has 1203). Evaluation (evaluator type "lvis") is not run here.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>

#include "detkit/config/defaults.h"
#include "detkit/data/catalog.h"
#include "detkit/data/loader.h"
#include "detkit/data/metadata.h"
#include "detkit/engine/trainer.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/solver/build.h"

namespace detkit::engine {
namespace {

const std::string kLvisTinyJson =
    std::string(DETKIT_SHARED_DIR) + "/fixtures/lvis_eval/lvis_v1_val_tiny.json";
const std::string kLvisTinyImages = std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/";

TEST(LvisZooTrain, MaskRcnnR50Fpn1xTrainsTwoIterations) {
  if (!std::filesystem::exists(kLvisTinyJson) ||
      !std::filesystem::exists(kLvisTinyImages + "val2017"))
    GTEST_SKIP() << "shared data absent: " << kLvisTinyJson << ", " << kLvisTinyImages;
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  struct Restore {
    int n;
    ~Restore() { at::set_num_threads(n); }
  } restore{threads};

  data::global_catalog().register_from_string(
      "lvis_zoo_tiny=lvis:" + kLvisTinyJson + ":" + kLvisTinyImages, "DETKIT_DATASETS_REGISTER");
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(std::string(DETKIT_SOURCE_DIR) +
                      "/configs/LVISv1-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml");
  EXPECT_EQ(cfg.get_string("DATALOADER.SAMPLER_TRAIN"), "RepeatFactorTrainingSampler");
  EXPECT_EQ(cfg.get_float("DATALOADER.REPEAT_THRESHOLD"), 0.001);
  cfg.merge_from_list(
      {"MODEL.WEIGHTS", "", "MODEL.DEVICE", "cpu", "SEED", "1", "DATASETS.TRAIN",
       "('lvis_zoo_tiny',)", "DATASETS.TEST", "('lvis_zoo_tiny',)", "MODEL.ROI_HEADS.NUM_CLASSES",
       "80", "INPUT.MIN_SIZE_TRAIN", "(64,)", "INPUT.MAX_SIZE_TRAIN", "96", "SOLVER.IMS_PER_BATCH",
       "1", "SOLVER.MAX_ITER", "2", "DATALOADER.NUM_WORKERS", "1", "MODEL.RPN.BATCH_SIZE_PER_IMAGE",
       "32", "MODEL.RPN.PRE_NMS_TOPK_TRAIN", "100", "MODEL.RPN.POST_NMS_TOPK_TRAIN", "32",
       "MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE", "16",
       // Untrained (FrozenBN an identity), the file's LR 0.02 diverges at the
       // second step; a small clipped step keeps both finite.
       "SOLVER.BASE_LR", "0.001", "SOLVER.CLIP_GRADIENTS.ENABLED", "True",
       "SOLVER.CLIP_GRADIENTS.CLIP_TYPE", "norm", "SOLVER.CLIP_GRADIENTS.CLIP_VALUE", "1.0"});
  const auto model = modeling::build_model(cfg);
  auto optimizer = solver::build_optimizer(cfg, *model);
  auto loader = data::build_detection_train_loader(cfg, 0, 1, /*seed=*/1);
  Trainer trainer(
      model, *optimizer, [&] { return loader->next_batch(); }, /*seed=*/1);
  trainer.train(0, 2);  // a non-finite loss is an Error naming it
  std::string losses;
  for (const auto& [name, value] : trainer.storage().latest_with_smoothing_hint(1)) {
    if (name.rfind("loss_", 0) != 0) continue;
    EXPECT_TRUE(std::isfinite(value.first)) << name;
    losses += " " + name + " " + std::to_string(value.first).substr(0, 5);
  }
  EXPECT_NE(losses.find("loss_mask"), std::string::npos) << losses;
  EXPECT_EQ(trainer.iter(), 1);  // iterations 0 and 1 ran
  const data::Metadata& m = data::global_metadata().get("lvis_zoo_tiny");
  EXPECT_EQ(m.evaluator_type, "lvis");
  EXPECT_EQ(m.class_image_count.size(), 80u);
  std::cout << "[ lvis zoo ] LVISv1-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml, 2 iterations "
               "on lvis_zoo_tiny: losses"
            << losses << "\n";
}

}  // namespace
}  // namespace detkit::engine
