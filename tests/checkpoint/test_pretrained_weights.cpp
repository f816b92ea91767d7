// Starting from pretrained .pkl weights as Detectron2 does: Caffe2 names converted, names matched
// by suffix, the Detectron2 model zoo's and Detectron1's files loaded into the fixture's Mask
// R-CNN with every tensor equal to the fixture's (diff 0), a Caffe2 ImageNet R-50 loaded into a
// full-size Mask R-CNN, fine-tuning on 3 classes reporting exactly the class-specific rows.
#include <gtest/gtest.h>

#include <set>

#include "detkit/checkpoint/caffe2_names.h"
#include "detkit/checkpoint/checkpointer.h"
#include "detkit/checkpoint/matching_heuristics.h"
#include "detkit/checkpoint/weights_file.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/utils/error.h"
#include "tests/checkpoint/numpy_pickle_oracle.h"

namespace detkit::checkpoint {
namespace {

using testing::NumpyPickleFixtures;

TEST(Caffe2Names, RenamedAsDetectron2Does) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"conv1_w", "stem.conv1.weight"},
      {"res_conv1_bn_s", "stem.conv1.norm.weight"},
      {"res_conv1_bn_b", "stem.conv1.norm.bias"},
      {"res2_0_branch2a_w", "res2.0.conv1.weight"},
      {"res2_0_branch1_w", "res2.0.shortcut.weight"},
      {"res2_0_branch1_bn_s", "res2.0.shortcut.norm.weight"},
      {"res3_1_branch2b_bn_rm", "res3.1.conv2.norm.running_mean"},
      {"res4_5_branch2c_bn_riv", "res4.5.conv3.norm.running_var"},
      {"res5_2_branch2c_bn_b", "res5.2.conv3.norm.bias"},
      {"fpn_inner_res5_2_sum_w", "fpn_lateral5.weight"},
      {"fpn_inner_res2_2_sum_lateral_b", "fpn_lateral2.bias"},
      {"fpn_res3_3_sum_w", "fpn_output3.weight"},
      {"conv_rpn_fpn2_w", "proposal_generator.rpn_head.conv.weight"},
      {"rpn_cls_logits_fpn2_b", "proposal_generator.rpn_head.objectness_logits.bias"},
      {"rpn_bbox_pred_fpn2_w", "proposal_generator.rpn_head.anchor_deltas.weight"},
      {"conv_rpn_w", "proposal_generator.rpn_head.conv.weight"},
      {"fc6_w", "box_head.fc1.weight"},
      {"fc7_b", "box_head.fc2.bias"},
      {"head_conv1_gn_s", "box_head.conv1.norm.weight"},
      {"cls_score_w", "cls_score.weight"},
      {"bbox_pred_b", "bbox_pred.bias"},
      {"_[mask]_fcn1_w", "mask_head.mask_fcn1.weight"},
      {"conv5_mask_w", "mask_head.deconv.weight"},
      {"mask_fcn_logits_b", "mask_head.predictor.bias"},
      {"conv_fcn1_w", "roi_heads.keypoint_head.conv_fcn1.weight"},
      {"kps_score_lowres_w", "roi_heads.keypoint_head.score_lowres.weight"},
      {"pred_w", "linear.weight"},
  };
  for (const auto& [caffe2, detectron2] : cases)
    EXPECT_EQ(caffe2_to_detectron2_name(caffe2), detectron2) << caffe2;
  EXPECT_THROW(caffe2_to_detectron2_name("fpn_resX_sum_w"), Error);
}

TEST(Caffe2Names, BackgroundRowsMoveOrGo) {
  const TensorDict weights = {{"cls_score_w", at::arange(5).reshape({5, 1})},
                              {"bbox_pred_b", at::arange(12)},
                              {"mask_fcn_logits_w", at::arange(3).reshape({3, 1, 1, 1})}};
  const RenamedWeights renamed = convert_caffe2_detectron_names(weights);
  EXPECT_TRUE(
      renamed.weights.at("cls_score.weight").equal(at::tensor({1, 2, 3, 4, 0}).reshape({5, 1})));
  EXPECT_TRUE(renamed.weights.at("bbox_pred.bias").equal(at::arange(4, 12)));
  EXPECT_TRUE(renamed.weights.at("mask_head.predictor.weight")
                  .equal(at::arange(1, 3).reshape({2, 1, 1, 1})));
  EXPECT_EQ(renamed.original.at("bbox_pred.bias"), "bbox_pred_b");
}

TEST(MatchingHeuristics, LongestDotBoundedSuffixWins) {
  const TensorDict model = {{"backbone.bottom_up.stem.conv1.weight", at::zeros({2})},
                            {"backbone.bottom_up.res2.0.conv1.weight", at::zeros({3})},
                            {"roi_heads.mesh_head.whatever_conv1.weight", at::zeros({2})},
                            {"roi_heads.box_head.fc1.weight", at::zeros({4})}};
  const TensorDict checkpoint = {{"conv1.weight", at::ones({2})},
                                 {"res2.0.conv1.weight", at::full({3}, 2.0)},
                                 {"fc1.weight", at::ones({5})},  // wrong shape: skipped
                                 {"linear.weight", at::ones({1})}};
  const TensorDict aligned = align_to_model(model, checkpoint);
  EXPECT_TRUE(aligned.at("backbone.bottom_up.stem.conv1.weight").equal(at::ones({2})));
  EXPECT_TRUE(aligned.at("backbone.bottom_up.res2.0.conv1.weight").equal(at::full({3}, 2.0)));
  EXPECT_FALSE(aligned.count("roi_heads.mesh_head.whatever_conv1.weight"));  // not dot-bounded
  EXPECT_FALSE(aligned.count("roi_heads.box_head.fc1.weight"));
  // unmatched checkpoint keys stay, under their names, to be reported as unused
  EXPECT_TRUE(aligned.count("fc1.weight") && aligned.count("linear.weight"));
  EXPECT_FALSE(aligned.count("conv1.weight"));
}

TEST(MatchingHeuristics, OneCheckpointKeyForTwoModelKeysIsAnErrorNamingBoth) {
  const TensorDict model = {{"roi_heads.box_head.fc1.weight", at::zeros({2})},
                            {"roi_heads.mask_head.fc1.weight", at::zeros({2})}};
  try {
    align_to_model(model, {{"fc1.weight", at::ones({2})}}, {{"fc1.weight", "fc1_w"}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "ambiguous weights: checkpoint key 'fc1_w' matches two keys of the model "
                 "('roi_heads.box_head.fc1.weight' and 'roi_heads.mask_head.fc1.weight'); rename "
                 "it in the file or load it with its full name");
  }
}

// The fixture's Mask R-CNN (optionally with other overrides), its weights file and a checkpointer.
struct FixtureModel {
  testing::Detectron2Fixture fx;
  std::shared_ptr<modeling::MetaArch> model;
  explicit FixtureModel(const std::vector<std::string>& overrides = {}) {
    config::CfgNode cfg = fx.config();
    cfg.merge_from_list(overrides);
    model = modeling::build_model(cfg);
  }
  LoadReport load(const std::string& path) {
    return Checkpointer(model, "", /*save_to_disk=*/false).load(path, false).report;
  }
  // Largest |model - fixture| over the fixture's tensors; -1 when a tensor is absent or its shape
  // differs.
  double max_diff_to_fixture() {
    const TensorDict own = state_dict(*model);
    double diff = 0;
    for (const auto& [name, want] : fx.weights()) {
      auto it = own.find(name);
      if (it == own.end() || it->second.sizes() != want.sizes()) return -1;
      diff = std::max(diff, (it->second - want).abs().max().item<double>());
    }
    return diff;
  }
};

#define DETKIT_REQUIRE_D2_PICKLES()                  \
  DETKIT_REQUIRE_NUMPY_PICKLES();                    \
  if (!NumpyPickleFixtures::get().have_detectron2()) \
  GTEST_SKIP() << "Detectron2 fixture absent: " << testing::Detectron2Fixture().dir

TEST(PretrainedWeights, ModelZooPicklesLoadExactlyInEveryProtocol) {
  DETKIT_REQUIRE_D2_PICKLES();
  for (const char* name : {"zoo_p2.pkl", "zoo_p4.pkl", "zoo_p5.pkl"}) {
    const WeightsFile file = read_weights_file(NumpyPickleFixtures::get().file(name));
    EXPECT_EQ(file.format, WeightsFormat::kDetectron2Pickle);
    EXPECT_EQ(file.author, "Detectron2 Model Zoo");
    EXPECT_FALSE(file.matching_heuristics);
    FixtureModel m;
    const LoadReport report = m.load(NumpyPickleFixtures::get().file(name));
    EXPECT_TRUE(report.complete()) << report.summary();
    EXPECT_EQ(report.loaded, m.fx.weights().size());
    const double diff = m.max_diff_to_fixture();
    std::cout << "[ pretrained ] " << name << ": " << report.loaded
              << " tensors, max diff to the fixture " << diff << "\n";
    EXPECT_EQ(diff, 0.0);
  }
}

TEST(PretrainedWeights, Detectron1PickleConvertsToTheFixtureExactly) {
  DETKIT_REQUIRE_D2_PICKLES();
  const std::string path = NumpyPickleFixtures::get().file("detectron1.pkl");
  const WeightsFile file = read_weights_file(path);
  EXPECT_EQ(file.format, WeightsFormat::kCaffe2Pickle);
  EXPECT_TRUE(file.matching_heuristics);
  for (const auto& [name, tensor] : file.model)
    EXPECT_EQ(name.find("_momentum"), std::string::npos) << name;
  FixtureModel m;
  const LoadReport report = m.load(path);
  EXPECT_TRUE(report.complete()) << report.summary();
  const double diff = m.max_diff_to_fixture();
  std::cout << "[ pretrained ] detectron1.pkl (blobs, Caffe2 names, background first): "
            << report.loaded << " tensors, max diff to the fixture " << diff << "\n";
  EXPECT_EQ(diff, 0.0);
}

TEST(PretrainedWeights, FineTuningOnThreeClassesSkipsOnlyTheClassSpecificRows) {
  DETKIT_REQUIRE_D2_PICKLES();
  FixtureModel m({"MODEL.ROI_HEADS.NUM_CLASSES", "3"});
  const LoadReport report = m.load(NumpyPickleFixtures::get().file("zoo_p4.pkl"));
  std::set<std::string> mismatched;
  for (const ShapeMismatch& s : report.mismatched) mismatched.insert(s.name);
  EXPECT_EQ(
      mismatched,
      (std::set<std::string>{
          "roi_heads.box_predictor.bbox_pred.bias", "roi_heads.box_predictor.bbox_pred.weight",
          "roi_heads.box_predictor.cls_score.bias", "roi_heads.box_predictor.cls_score.weight",
          "roi_heads.mask_head.predictor.bias", "roi_heads.mask_head.predictor.weight"}));
  EXPECT_EQ(report.loaded, m.fx.weights().size() - 6);
  EXPECT_TRUE(report.unexpected.empty());
  EXPECT_TRUE(report.missing.empty()) << report.summary();
  const std::string summary = report.summary();
  // As Detectron2 prints it: the skipped rows are also "not found in the checkpoint".
  EXPECT_NE(summary.find("Some model parameters or buffers are not found in the checkpoint:\n"
                         "  roi_heads.box_predictor.bbox_pred.{bias, weight}\n"
                         "  roi_heads.box_predictor.cls_score.{bias, weight}\n"
                         "  roi_heads.mask_head.predictor.{bias, weight}"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("Skip loading parameter 'roi_heads.box_predictor.cls_score.weight' to "
                         "the model due to incompatible shapes: (81, 256) in the checkpoint but "
                         "(4, 256) in the model!"),
            std::string::npos)
      << summary;
}

TEST(PretrainedWeights, Caffe2ImageNetR50LoadsIntoAFullSizeMaskRCNN) {
  DETKIT_REQUIRE_NUMPY_PICKLES();
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(std::string(DETKIT_SOURCE_DIR) +
                      "/configs/COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml");
  auto model = modeling::build_model(cfg);
  const std::string path = NumpyPickleFixtures::get().file("r50_caffe2.pkl");
  const LoadReport report = Checkpointer(model, "", false).load(path, false).report;
  EXPECT_EQ(report.unexpected, (std::vector<std::string>{"linear.bias", "linear.weight"}));
  EXPECT_TRUE(report.mismatched.empty()) << report.summary();
  for (const std::string& name : report.missing)
    EXPECT_NE(name.rfind("backbone.bottom_up.", 0), 0u) << name << " was not loaded";
  const TensorDict own = state_dict(*model);
  const TensorDict want =
      load_plain_tensor_dict(NumpyPickleFixtures::get().file("r50_expected.pth"));
  // stem 3 + 16 bottlenecks x 3 convs x (w, s, b) + 4 shortcuts x 3
  ASSERT_EQ(want.size(), 159u);
  double diff = 0;
  for (const auto& [name, tensor] : want) {
    ASSERT_TRUE(own.count(name)) << name;
    ASSERT_EQ(own.at(name).sizes(), tensor.sizes()) << name;
    diff = std::max(diff, (own.at(name) - tensor).abs().max().item<double>());
  }
  // FrozenBN statistics the file does not have: mean 0, variance 1 (Detectron2's version-less
  // FrozenBatchNorm2d loading), so the affine _bn_s/_bn_b act alone.
  size_t statistics = 0;
  for (const auto& [name, tensor] : own) {
    if (name.rfind("backbone.bottom_up.", 0) != 0) continue;
    if (name.size() > 13 && name.compare(name.size() - 13, 13, ".running_mean") == 0) {
      EXPECT_TRUE(tensor.equal(at::zeros_like(tensor))) << name;
      ++statistics;
    }
    if (name.size() > 12 && name.compare(name.size() - 12, 12, ".running_var") == 0)
      EXPECT_TRUE(tensor.equal(at::ones_like(tensor))) << name;
  }
  EXPECT_EQ(statistics, 53u);  // stem + 48 convs + 4 shortcuts
  EXPECT_EQ(report.loaded, 159u + 2 * 53u);
  std::cout << "[ pretrained ] r50_caffe2.pkl (Python 2 style, MSRA names) into "
               "mask_rcnn_R_50_FPN_1x: "
            << report.loaded << " tensors loaded, max diff " << diff << "\n";
  EXPECT_EQ(diff, 0.0);
}

}  // namespace
}  // namespace detkit::checkpoint
