// The box predictor's sigmoid cross-entropy and federated losses against Detectron2's formulas
// (tests/parity/oracle_fed_loss.py): the class weights from class_image_count, the classes drawn
// under one seed, the losses and their gradients for a fixed set of federated classes, and the
// sigmoid scores; then the edge cases and the named errors of bad settings.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "detkit/config/defaults.h"
#include "detkit/data/fed_loss_weights.h"
#include "detkit/data/metadata.h"
#include "detkit/modeling/roi_heads/fast_rcnn.h"
#include "detkit/modeling/roi_heads/fed_loss.h"
#include "tests/parity/oracle.h"
#include "tests/support/error_of.h"
#include "tests/support/tensor_compare.h"

namespace detkit::modeling {
namespace {

using testing::max_abs_diff;
using testing::relative_error;
using testing::to_vector;

const std::vector<int64_t> kCounts = {5, 1, 20, 0, 300, 7, 2};  // K = 7; class 3 has no image
const int64_t kK = 7;

// Proposals of `sizes` rois each, with gt classes `classes` (in order over the images).
std::vector<structures::Instances> proposals_of(const std::vector<int64_t>& sizes,
                                                const at::Tensor& classes) {
  std::vector<structures::Instances> out;
  int64_t start = 0;
  for (int64_t n : sizes) {
    structures::Instances p(64, 96);
    const at::Tensor boxes = at::tensor({4.f, 6.f, 40.f, 50.f}).repeat({n, 1});
    p.set("proposal_boxes", structures::Boxes(boxes));
    p.set("gt_boxes", structures::Boxes(boxes + 2));
    p.set("gt_classes", classes.narrow(0, start, n));
    out.push_back(p);
    start += n;
  }
  return out;
}

FastRCNNOutputLayersOptions sigmoid_options(bool fed, std::vector<double> weights = {}) {
  FastRCNNOutputLayersOptions o;
  o.input_size = 4;
  o.num_classes = kK;
  o.use_sigmoid_ce = true;
  o.use_fed_loss = fed;
  o.fed_loss_num_classes = 6;
  o.fed_loss_cls_weights = std::move(weights);
  return o;
}

// The loss and its gradient with respect to the logits.
std::pair<at::Tensor, at::Tensor> loss_and_grad(const at::Tensor& logits, const at::Tensor& gt,
                                                const at::Tensor& mask) {
  at::Tensor x = logits.clone().requires_grad_(true);
  at::Tensor loss = sigmoid_cross_entropy_loss(x, gt, mask);
  loss.backward();
  return {loss.detach().reshape({1}), x.grad()};
}

TEST(FedLoss, MatchesDetectron2Formulas) {
  DETKIT_REQUIRE_ORACLE();
  data::global_metadata().get("fed_loss_parity_train").class_image_count = kCounts;
  const at::Tensor weights =
      at::tensor(data::fed_loss_class_weights({"fed_loss_parity_train"}, 0.5), at::kDouble)
          .to(at::kFloat);
  auto gen = at::detail::createCPUGenerator(3);
  const at::Tensor logits = at::randn({12, kK + 1}, gen) * 3;
  // Classes 0 and 3 and background (7): 3 present, 3 more drawn for 6.
  const at::Tensor gt = at::tensor(std::vector<int64_t>{0, 3, 7, 7, 3, 0, 7, 7, 3, 7, 7, 7});
  const at::Tensor fed = at::tensor(std::vector<int64_t>{0, 1, 3, 5, 7, 2});
  double worst_weights = 0, worst_loss = 0, worst_grad = 0, worst_probs = 0;
  for (int64_t seed : {11, 12}) {
    const auto want = testing::run_oracle(
        "oracle_fed_loss.py", "fed_loss",
        {{"logits", logits},
         {"gt_classes", gt},
         {"counts", at::tensor(kCounts)},
         {"fed_classes", fed},
         {"params", at::tensor(std::vector<double>{0.5, 6, static_cast<double>(seed)})}});
    worst_weights = std::max(worst_weights, relative_error(weights, want.at("weights")));
    at::manual_seed(seed);
    const at::Tensor drawn = fed_loss_classes(gt, 6, weights);
    std::cout << "[ fed loss ] seed " << seed << ": detkit drew "
              << ::testing::PrintToString(to_vector(drawn)) << ", Detectron2's formula "
              << ::testing::PrintToString(to_vector(want.at("drawn"))) << "\n";
    EXPECT_EQ(to_vector(drawn), to_vector(want.at("drawn")));
    for (const auto& [name, mask] :
         {std::pair<std::string, at::Tensor>{"sigmoid", at::Tensor()},
          std::pair<std::string, at::Tensor>{"fed", fed_loss_class_mask(fed, kK)}}) {
      const auto [loss, grad] = loss_and_grad(logits, gt, mask);
      worst_loss = std::max(worst_loss, relative_error(loss, want.at("loss_" + name)));
      worst_grad = std::max(worst_grad, relative_error(grad, want.at("grad_" + name)));
    }
    FastRCNNOutputLayers predictor(sigmoid_options(false));
    const auto probs =
        predictor->predict_probs({logits, at::zeros({12, 4 * kK})}, proposals_of({5, 7}, gt));
    worst_probs = std::max(worst_probs, relative_error(at::cat(probs), want.at("probs")));
  }
  std::cout << "[ fed loss ] largest relative differences: weights " << worst_weights << ", losses "
            << worst_loss << ", gradients " << worst_grad << ", sigmoid scores " << worst_probs
            << "\n";
  EXPECT_LE(worst_weights, 1e-6);
  EXPECT_LE(worst_loss, 1e-6);
  EXPECT_LE(worst_grad, 1e-6);
  EXPECT_LE(worst_probs, 1e-6);
}

TEST(FedLoss, PredictorLossIsTheSigmoidLossOverTheDrawnClasses) {
  std::vector<double> weights(kCounts.begin(), kCounts.end());
  FastRCNNOutputLayers fed(sigmoid_options(true, weights));
  FastRCNNOutputLayers plain(sigmoid_options(false));
  auto gen = at::detail::createCPUGenerator(5);
  const at::Tensor logits = at::randn({9, kK + 1}, gen);
  const at::Tensor gt = at::tensor(std::vector<int64_t>{2, 7, 7, 4, 7, 2, 7, 7, 7});
  const auto proposals = proposals_of({4, 5}, gt);
  const at::Tensor deltas = at::zeros({9, 4 * kK});
  at::manual_seed(21);
  const at::Tensor got = fed->losses({logits, deltas}, proposals).at("loss_cls");
  at::manual_seed(21);
  const at::Tensor classes = fed_loss_classes(gt, 6, at::tensor(weights).to(at::kFloat));
  const at::Tensor want = sigmoid_cross_entropy_loss(logits, gt, fed_loss_class_mask(classes, kK));
  std::cout << "[ fed loss ] predictor's loss_cls " << got.item<double>() << ", over classes "
            << ::testing::PrintToString(to_vector(classes)) << " " << want.item<double>() << "\n";
  EXPECT_EQ(got.item<double>(), want.item<double>());
  EXPECT_EQ(plain->losses({logits, deltas}, proposals).at("loss_cls").item<double>(),
            sigmoid_cross_entropy_loss(logits, gt).item<double>());
  // The buffer Detectron2's state dicts carry, float32; none without the federated loss.
  const auto buffers = fed->named_buffers();
  ASSERT_TRUE(buffers.contains("fed_loss_cls_weights"));
  EXPECT_EQ(max_abs_diff(buffers["fed_loss_cls_weights"], at::tensor(weights)), 0.0);
  EXPECT_EQ(buffers["fed_loss_cls_weights"].scalar_type(), at::kFloat);
  EXPECT_FALSE(plain->named_buffers().contains("fed_loss_cls_weights"));
}

TEST(FedLoss, DrawsOnlyWhatIsMissingAndKeepsEveryClassWhenAskedForMore) {
  const at::Tensor weights = at::tensor(std::vector<float>{1, 2, 3});
  const at::Tensor gt = at::tensor(std::vector<int64_t>{2, 3, 0, 3});
  // Enough classes present: they alone, sorted, and nothing drawn.
  EXPECT_EQ(to_vector(fed_loss_classes(gt, 3, weights)), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(to_vector(fed_loss_classes(gt, 2, weights)), (std::vector<int64_t>{0, 2, 3}));
  // One missing: the only foreground class with weight left, 1.
  for (int seed = 0; seed < 5; ++seed) {
    at::manual_seed(seed);
    EXPECT_EQ(to_vector(fed_loss_classes(gt, 4, weights)), (std::vector<int64_t>{0, 2, 3, 1}));
  }
  // More than there are (Detectron2's torch.multinomial would refuse 47 of 4): every class.
  const at::Tensor classes = fed_loss_classes(gt, 50, weights);
  EXPECT_EQ(classes.numel(), 3 + 4);
  EXPECT_EQ(to_vector(fed_loss_class_mask(classes, 3)), (std::vector<int64_t>{1, 1, 1}));
  // Every foreground class present, none left to draw from (torch.multinomial would refuse).
  const at::Tensor all = at::tensor(std::vector<int64_t>{1, 0, 3, 2});
  EXPECT_EQ(to_vector(fed_loss_class_mask(fed_loss_classes(all, 50, weights), 3)),
            (std::vector<int64_t>{1, 1, 1}));
}

TEST(FedLoss, NoRoisGiveAZeroLossThatStillReachesTheLogits) {
  const at::Tensor logits = at::randn({0, kK + 1}).requires_grad_(true);
  const at::Tensor gt = at::zeros({0}, at::kLong);
  at::Tensor loss = sigmoid_cross_entropy_loss(logits, gt);
  EXPECT_EQ(loss.item<double>(), 0.0);
  FastRCNNOutputLayers fed(
      sigmoid_options(true, std::vector<double>(kCounts.begin(), kCounts.end())));
  loss = fed->losses({logits, at::zeros({0, 4 * kK})}, {}).at("loss_cls");
  EXPECT_EQ(loss.item<double>(), 0.0);
  loss.backward();
  EXPECT_TRUE(logits.grad().defined());
}

// What fast_rcnn_options_from_config raises for `overrides` over Detectron2's defaults.
std::string config_error(const std::vector<std::string>& overrides) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"MODEL.ROI_HEADS.NUM_CLASSES", "7", "MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE",
                       "True", "MODEL.ROI_BOX_HEAD.USE_FED_LOSS", "True", "DATASETS.TRAIN",
                       "('fed_loss_config_train',)"});
  cfg.merge_from_list(overrides);
  return testing::error_of([&] { fast_rcnn_options_from_config(cfg, 16); });
}

TEST(FedLoss, BadSettingsAndMissingCountsAreNamedErrors) {
  auto& meta = data::global_metadata();
  meta.get("fed_loss_config_train").class_image_count = kCounts;
  meta.get("fed_loss_config_other").class_image_count = {5, 1, 20, 0, 300, 7, 3};
  meta.get("fed_loss_config_negative").class_image_count = {5, 1, -20, 0, 300, 7, 2};
  meta.get("fed_loss_config_zero").class_image_count = std::vector<int64_t>(7, 0);
  meta.get("fed_loss_config_named").thing_classes = {"a", "b"};
  meta.get("fed_loss_config_named").class_image_count = kCounts;
  EXPECT_EQ(config_error({}), "(no error)");
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE", "False"},
       {"MODEL.ROI_BOX_HEAD.USE_FED_LOSS True needs MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE True"}},
      {{"MODEL.ROI_BOX_HEAD.FED_LOSS_NUM_CLASSES", "0"},
       {"MODEL.ROI_BOX_HEAD.FED_LOSS_NUM_CLASSES must be at least 1, got 0"}},
      {{"DATASETS.TRAIN", "('fed_loss_config_train', 'fed_loss_config_uncounted')"},
       {"MODEL.ROI_BOX_HEAD.USE_FED_LOSS", "'fed_loss_config_uncounted'", "no class_image_count"}},
      {{"DATASETS.TRAIN", "()"}, {"MODEL.ROI_BOX_HEAD.USE_FED_LOSS", "DATASETS.TRAIN"}},
      {{"DATASETS.TRAIN", "('fed_loss_config_train', 'fed_loss_config_other')"},
       {"MODEL.ROI_BOX_HEAD.USE_FED_LOSS", "'fed_loss_config_other'", "differs"}},
      {{"DATASETS.TRAIN", "('fed_loss_config_negative',)"},
       {"MODEL.ROI_BOX_HEAD.USE_FED_LOSS", "'fed_loss_config_negative'", "class 2", "negative"}},
      {{"DATASETS.TRAIN", "('fed_loss_config_zero',)"},
       {"MODEL.ROI_BOX_HEAD.USE_FED_LOSS", "'fed_loss_config_zero'", "every"}},
      {{"DATASETS.TRAIN", "('fed_loss_config_named',)"},
       {"MODEL.ROI_BOX_HEAD.USE_FED_LOSS", "'fed_loss_config_named'", "2 thing classes"}},
      {{"MODEL.ROI_BOX_HEAD.FED_LOSS_FREQ_WEIGHT_POWER", "-1.0"},
       {"MODEL.ROI_BOX_HEAD.USE_FED_LOSS", "class 3", "FED_LOSS_FREQ_WEIGHT_POWER", "not finite"}},
      {{"MODEL.ROI_HEADS.NUM_CLASSES", "8"},
       {"MODEL.ROI_BOX_HEAD.USE_FED_LOSS", "has 7 classes", "MODEL.ROI_HEADS.NUM_CLASSES is 8"}},
  };
  for (const auto& [overrides, parts] : cases) {
    const std::string message = config_error(overrides);
    std::cout << "[ fed loss ] " << overrides[0] << " " << overrides[1] << ": " << message << "\n";
    for (const auto& part : parts) testing::expect_contains(message, part);
  }
  // Without the federated loss its keys are not read, and the sigmoid loss needs no counts.
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE", "True",
                       "MODEL.ROI_BOX_HEAD.FED_LOSS_NUM_CLASSES", "0"});
  const FastRCNNOutputLayersOptions o = fast_rcnn_options_from_config(cfg, 16);
  EXPECT_TRUE(o.use_sigmoid_ce);
  EXPECT_FALSE(o.use_fed_loss);
}

}  // namespace
}  // namespace detkit::modeling
