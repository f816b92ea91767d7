// export_torchscript: each fixture model (Faster, Mask, Keypoint, Cascade Mask R-CNN, RetinaNet)
// written to model.ts, read back with torch::jit::load (C++) and run on real JPEGs gives
// DefaultPredictor's detections as matched sets: boxes <= 1e-3 px, scores <= 1e-4, masks at most
// 2 pixels apart or IoU >= 0.999, keypoints <= 0.05 px. Components without an exported form are
// refused by name, and a file that cannot be written is not left half-written.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <filesystem>
#include <iostream>

#include "detkit/config/defaults.h"
#include "detkit/data/image/image_io.h"
#include "detkit/engine/predictor.h"
#include "detkit/export/export_plan.h"
#include "detkit/export/torchscript_export.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/utils/error.h"
#include "tests/support/error_of.h"
#include "tests/support/matched_sets.h"
#include "tests/support/temp_dir.h"

namespace detkit::export_ {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string name, fixture;
  std::vector<std::string> overrides;
};

std::ostream& operator<<(std::ostream& out, const Case& c) { return out << c.name; }

const std::string kImages = std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/val2017/";

config::CfgNode fixture_config(const Case& c) {
  const std::string dir = std::string(DETKIT_SHARED_DIR) + "/fixtures/" + c.fixture + "/";
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(dir + "config.yaml");
  std::vector<std::string> overrides = c.overrides;
  overrides.insert(overrides.end(), {"MODEL.WEIGHTS", dir + "weights.pth"});
  cfg.merge_from_list(overrides);
  return cfg;
}

class TorchScriptExport : public ::testing::TestWithParam<Case> {};

TEST_P(TorchScriptExport, LoadedBackInCppItGivesThePredictorsDetections) {
  const Case c = GetParam();
  if (!fs::exists(std::string(DETKIT_SHARED_DIR) + "/fixtures/" + c.fixture + "/weights.pth") ||
      !fs::exists(kImages))
    GTEST_SKIP() << "fixture or coco_tiny absent under " << DETKIT_SHARED_DIR;
  const config::CfgNode cfg = fixture_config(c);
  engine::DefaultPredictor predictor(cfg);
  testing::TempDir dir("torchscript_" + c.name);
  {
    torch::jit::Module exported = export_torchscript(predictor.model(), cfg);
    save_torchscript(exported, dir.path("model.ts"));
  }
  torch::jit::Module module = torch::jit::load(dir.path("model.ts"));
  // A landscape and a portrait image: sizes the export never saw.
  for (const char* image : {"000000532481.jpg", "000000125952.jpg"}) {
    const cv::Mat bgr = data::read_image(kImages + image, "BGR");
    const structures::Instances want = predictor(bgr);
    const structures::ModelInput input = predictor.preprocess(bgr);
    const c10::Dict<c10::IValue, c10::IValue> got =
        module.forward({input.image.to(at::kByte), input.height, input.width}).toGenericDict();
    auto field = [&](const char* name) { return got.at(name).toTensor(); };
    const testing::SetMatch m = testing::match_sets(
        {field("pred_boxes"), field("scores"), field("pred_classes")},
        {want.boxes("pred_boxes").tensor(), want.tensor("scores"), want.tensor("pred_classes")},
        1e-3, 1e-4);
    std::cout << c.name << " " << image << ": " << m.summary() << "\n";
    ASSERT_GT(want.size(), 0);
    EXPECT_EQ(field("scores").size(0), want.size());
    EXPECT_EQ(m.unmatched_reference.size(), 0u);
    EXPECT_LE(m.max_box_diff, 1e-3);
    EXPECT_LE(m.max_score_diff, 1e-4);
    int64_t worst_pixels = 0;
    double worst_keypoint = 0;
    for (size_t r = 0; r < m.partner.size(); ++r) {
      const int64_t o = m.partner[r];
      if (o < 0) continue;
      if (want.has("pred_masks")) {
        const at::Tensor a = field("pred_masks")[o], b = want.tensor("pred_masks")[r];
        const int64_t apart = a.ne(b).sum().item<int64_t>();
        const double united = (a | b).sum().item<double>();
        worst_pixels = std::max(worst_pixels, apart);
        EXPECT_TRUE(apart <= 2 || 1.0 - apart / united >= 0.999) << "mask " << r << ": " << apart;
      }
      if (want.has("pred_keypoints")) {
        const double d = (field("pred_keypoints")[o] - want.tensor("pred_keypoints")[r])
                             .abs().max().item<double>();
        worst_keypoint = std::max(worst_keypoint, d);
      }
    }
    if (want.has("pred_masks")) std::cout << "  masks: at most " << worst_pixels << " pixels apart\n";
    if (want.has("pred_keypoints")) {
      std::cout << "  keypoints: largest difference " << worst_keypoint << "\n";
      EXPECT_LE(worst_keypoint, 0.05);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, TorchScriptExport,
    ::testing::Values(Case{"faster_rcnn", "detectron2", {"MODEL.MASK_ON", "False"}},
                      Case{"mask_rcnn", "detectron2", {}},
                      Case{"keypoint_rcnn", "detectron2_keypoint", {}},
                      Case{"cascade_mask_rcnn", "detectron2_cascade", {}},
                      Case{"retinanet", "detectron2_retinanet", {}}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(TorchScriptExportErrors, AComponentWithoutAnExportedFormIsNamedWithItsKey) {
  config::CfgNode cfg = config::get_cfg();  // Detectron2's defaults: a C4 backbone
  EXPECT_NE(testing::error_of([&] { check_exportable(cfg); })
                .find("export: MODEL.BACKBONE.NAME 'build_resnet_backbone' has no exported form"),
            std::string::npos);
  cfg.merge_from_list({"MODEL.BACKBONE.NAME", "build_resnet_fpn_backbone", "MODEL.ROI_HEADS.NAME",
                       "Res5ROIHeads"});
  EXPECT_EQ(testing::error_of([&] { check_exportable(cfg); }),
            "export: MODEL.ROI_HEADS.NAME 'Res5ROIHeads' has no exported form in detkit "
            "(exported: StandardROIHeads, CascadeROIHeads)");
  cfg.merge_from_list({"MODEL.ROI_HEADS.NAME", "StandardROIHeads", "MODEL.ROI_BOX_HEAD.NAME",
                       "FastRCNNConvFCHead", "MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE", "True"});
  EXPECT_EQ(testing::error_of([&] { check_exportable(cfg); }),
            "export: MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE True (sigmoid class scores) has no "
            "exported form in detkit");
  cfg = config::get_cfg();
  cfg.merge_from_list({"MODEL.META_ARCHITECTURE", "ProposalNetwork"});
  EXPECT_EQ(testing::error_of([&] { check_exportable(cfg); }),
            "export: MODEL.META_ARCHITECTURE 'ProposalNetwork' has no exported form in detkit "
            "(exported: GeneralizedRCNN, RetinaNet, SemanticSegmentor, PanopticFPN)");
}

TEST(TorchScriptExportErrors, SegmentationModelsWithoutAnExportedFormAreNamed) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"MODEL.META_ARCHITECTURE", "SemanticSegmentor", "MODEL.BACKBONE.NAME",
                       "build_resnet_fpn_backbone"});
  check_exportable(cfg);  // SemSegFPNHead on ResNet + FPN: exported
  cfg.merge_from_list({"MODEL.SEM_SEG_HEAD.NAME", "DeepLabV3Head"});
  EXPECT_EQ(testing::error_of([&] { check_exportable(cfg); }),
            "export: MODEL.SEM_SEG_HEAD.NAME 'DeepLabV3Head' has no exported form in detkit "
            "(exported: SemSegFPNHead)");
  cfg.merge_from_list(
      {"MODEL.SEM_SEG_HEAD.NAME", "SemSegFPNHead", "MODEL.BACKBONE.NAME", "build_resnet_backbone"});
  EXPECT_NE(testing::error_of([&] {
              check_exportable(cfg);
            }).find("export: MODEL.BACKBONE.NAME 'build_resnet_backbone' has no exported form"),
            std::string::npos);
  cfg = config::get_cfg();
  cfg.merge_from_file(std::string(DETKIT_SOURCE_DIR) +
                      "/configs/COCO-PanopticSegmentation/panoptic_fpn_R_50_1x.yaml");
  check_exportable(cfg);
  cfg.merge_from_list({"MODEL.MASK_ON", "False"});
  EXPECT_EQ(testing::error_of([&] { check_exportable(cfg); }),
            "export: PanopticFPN with MODEL.MASK_ON False has no exported form in detkit (the "
            "panoptic combination places the instances' masks)");
}

// The README demo's config; its model with random weights: what plan_export reads of a model
// needs no training.
config::CfgNode demo_config() {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(std::string(DETKIT_SOURCE_DIR) + "/configs/quick/mask_rcnn_R_18_FPN_shapes.yaml");
  return cfg;
}

TEST(TorchScriptExportErrors, ALayerThePlanDoesNotRunIsNamedNotSkipped) {
  auto model = modeling::build_model(demo_config());
  EXPECT_EQ(plan_export(*model, demo_config()).weights.count("roi_heads.box_predictor.cls_score.weight"), 1u);
  // A layer of a kind the exported model has no form for (here a BatchNorm outside any conv).
  model->register_module("extra_norm", torch::nn::BatchNorm2d(8));
  EXPECT_EQ(testing::error_of([&] { plan_export(*model, demo_config()); }),
            "export: extra_norm.weight belongs to a layer without an exported form (extra_norm)");
}

TEST(TorchScriptExportErrors, ATransposedConvolutionWithOtherSettingsIsNamed) {
  auto model = modeling::build_model(demo_config());
  model->register_module("odd_deconv", torch::nn::ConvTranspose2d(
      torch::nn::ConvTranspose2dOptions(8, 8, 2).stride(2).output_padding(1)));
  EXPECT_NE(testing::error_of([&] { plan_export(*model, demo_config()); })
                .find("export: the transposed convolution odd_deconv has settings the exported "
                      "model does not handle"),
            std::string::npos);
}

TEST(TorchScriptExportErrors, AFileThatCannotBeWrittenIsAnErrorAndLeavesNothing) {
  torch::jit::Module module("__torch__.detkit.Empty");
  module.register_attribute("x", c10::IntType::get(), int64_t{1});
  module.define("def forward(self) -> int:\n    return self.x\n");
  testing::TempDir dir("torchscript_unwritable");
  const std::string blocker = dir.write("a_file", "not a folder");
  const std::string path = blocker + "/model.ts";
  EXPECT_NE(testing::error_of([&] { save_torchscript(module, path); }).find(path), std::string::npos);
  EXPECT_FALSE(fs::exists(path));
  save_torchscript(module, dir.path("model.ts"));  // and where it can, it is whole
  EXPECT_EQ(torch::jit::load(dir.path("model.ts")).forward({}).toInt(), 1);
}

}  // namespace
}  // namespace detkit::export_
