// The same run at any world size, in one process: the global batch of 4 real coco_tiny images
// (wide and tall: grouping and padding matter) run as 1, 2 and 4 slices — each slice padded to
// the global batch's size, as Trainer::fetch_batch pads with several ranks, and the losses and
// gradients averaged over the slices, as the ranks average them — gives the one-process losses
// and gradients. A GroupNorm model: no batch statistics. Detectron2 averages the mask loss per
// rank (over that rank's foreground boxes), so it alone may differ; the test prints how far.
// The multi-process run of the same (Gloo ranks, weights after steps) is
// tests/tools/check_world_size_invariance.py.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>

#include "detkit/config/defaults.h"
#include "detkit/data/catalog.h"
#include "detkit/data/loader.h"
#include "detkit/modeling/meta_arch/meta_arch.h"

namespace detkit::engine {
namespace {

const std::string kTinyRoot = std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/";

config::CfgNode invariance_config(bool mask_on) {
  if (!data::global_catalog().contains("invariance_tiny_train"))
    data::register_coco_instances("invariance_tiny_train",
                                  kTinyRoot + "annotations/instances_train2017.json",
                                  kTinyRoot + "train2017");
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(std::string(DETKIT_SOURCE_DIR) +
                      "/configs/quick/mask_rcnn_R_18_FPN_shapes.yaml");
  cfg.merge_from_list({"DATASETS.TRAIN", "('invariance_tiny_train',)", "MODEL.MASK_ON",
                       mask_on ? "True" : "False", "MODEL.ROI_HEADS.NUM_CLASSES", "80",
                       "MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE", "64", "INPUT.MIN_SIZE_TRAIN",
                       "(96, 128)", "INPUT.MAX_SIZE_TRAIN", "160", "SOLVER.IMS_PER_BATCH", "4",
                       "DATALOADER.NUM_WORKERS", "0", "SEED", "5"});
  return cfg;
}

struct StepResult {
  std::map<std::string, double> losses;  // the mean over the slices
  std::vector<at::Tensor> gradients;     // of the total loss, the mean over the slices
};

// Global batch `batch` of the config's stream run as `world` slices, each padded to the global
// batch's size (or to its own with `global_padding` false).
StepResult run_as_slices(const config::CfgNode& cfg, modeling::MetaArch& model, int world,
                         int64_t batch, bool global_padding = true) {
  std::vector<std::vector<structures::ModelInput>> slices;
  int64_t h = 0, w = 0;
  for (int rank = 0; rank < world; ++rank) {
    auto loader = data::build_detection_train_loader(cfg, rank, world, std::nullopt, batch);
    slices.push_back(loader->next_batch());
    for (const auto& input : slices.back()) {
      h = std::max(h, input.image.size(1));
      w = std::max(w, input.image.size(2));
    }
  }
  StepResult out;
  for (const at::Tensor& p : model.parameters()) out.gradients.push_back(at::zeros_like(p));
  for (auto& slice : slices) {
    if (global_padding)
      for (auto& input : slice) {
        input.min_padded_height = h;
        input.min_padded_width = w;
      }
    for (const at::Tensor& p : model.parameters()) p.mutable_grad() = at::Tensor();
    const structures::LossDict losses = model.losses(slice);
    at::Tensor total = at::zeros({});
    for (const auto& [name, loss] : losses) {
      out.losses[name] += loss.item<double>() / world;
      total = total + loss;
    }
    total.backward();
    const std::vector<at::Tensor> params = model.parameters();
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].grad().defined()) out.gradients[i] += params[i].grad() / world;
  }
  return out;
}

double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-12); }

class WorldSizeInvariance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kTinyRoot + "annotations/instances_train2017.json"))
      GTEST_SKIP() << "coco_tiny absent: " << kTinyRoot;
  }
};

TEST_F(WorldSizeInvariance, SlicesOfTheGlobalBatchGiveTheOneProcessLosses) {
  const config::CfgNode cfg = invariance_config(/*mask_on=*/true);
  at::manual_seed(0);
  auto model = modeling::build_model(cfg);
  model->train();
  for (int64_t batch : {0, 1}) {
    const StepResult one = run_as_slices(cfg, *model, 1, batch);
    for (int world : {2, 4}) {
      const StepResult many = run_as_slices(cfg, *model, world, batch);
      for (const auto& [name, value] : one.losses) {
        const double diff = relative(many.losses.at(name), value);
        std::cout << "[ invariance ] batch " << batch << ", world " << world << ": " << name << " "
                  << many.losses.at(name) << " vs " << value << " at world 1, relative diff "
                  << diff << "\n";
        if (name != "loss_mask") EXPECT_LE(diff, 1e-5) << name << ", world " << world;
      }
    }
  }
  // What the global padding is for: slices padded on their own see other anchors and features.
  const StepResult one = run_as_slices(cfg, *model, 1, 0);
  const StepResult own = run_as_slices(cfg, *model, 4, 0, /*global_padding=*/false);
  std::cout << "[ invariance ] without the global padding, world 4: loss_rpn_cls relative diff "
            << relative(own.losses.at("loss_rpn_cls"), one.losses.at("loss_rpn_cls")) << "\n";
}

TEST_F(WorldSizeInvariance, SlicesOfTheGlobalBatchGiveTheOneProcessGradients) {
  // Faster R-CNN: every loss is normalised per image, so the averaged gradients are the
  // one-process gradients up to float reduction order.
  const config::CfgNode cfg = invariance_config(/*mask_on=*/false);
  at::manual_seed(0);
  auto model = modeling::build_model(cfg);
  model->train();
  const StepResult one = run_as_slices(cfg, *model, 1, 0);
  for (int world : {2, 4}) {
    const StepResult many = run_as_slices(cfg, *model, world, 0);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < one.gradients.size(); ++i) {
      worst = std::max(worst, (many.gradients[i] - one.gradients[i]).abs().max().item<double>());
      scale = std::max(scale, one.gradients[i].abs().max().item<double>());
    }
    std::cout << "[ invariance ] world " << world << ": gradients max abs diff " << worst
              << " (largest gradient " << scale << ")\n";
    EXPECT_LE(worst, 1e-5 * scale) << "world " << world;
  }
}

}  // namespace
}  // namespace detkit::engine
