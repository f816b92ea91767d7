// A component name the registries do not know is an error that names the config key, the
// unknown name, and the registered names (with a suggestion when one is close).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/modeling/meta_arch/small_model.h"

namespace detkit::modeling {
namespace {

std::string build_error(const std::string& key, const std::string& value) {
  try {
    build_model(testing::small_config({key, value}));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

struct Case {
  std::string key, registered;
};

// What building a small model with `overrides` raises ("no error" when it builds).
std::string build_error(const std::vector<std::string>& overrides) {
  try {
    build_model(testing::small_config(overrides));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

TEST(RegistryErrors, UnknownNamesListTheRegisteredOnes) {
  const std::vector<Case> cases = {
      {"MODEL.META_ARCHITECTURE",
       "GeneralizedRCNN, PanopticFPN, ProposalNetwork, RetinaNet, SemanticSegmentor"},
      {"MODEL.BACKBONE.NAME",
       "build_resnet_backbone, build_resnet_fpn_backbone, build_retinanet_resnet_fpn_backbone, "
       "build_retinanet_resnet_fpn_p5_backbone"},
      {"MODEL.PROPOSAL_GENERATOR.NAME", "RPN"},
      {"MODEL.ROI_HEADS.NAME", "CascadeROIHeads, Res5ROIHeads, StandardROIHeads"},
      {"MODEL.ROI_BOX_HEAD.NAME", "FastRCNNConvFCHead"},
      {"MODEL.ROI_MASK_HEAD.NAME", "MaskRCNNConvUpsampleHead"},
  };
  for (const auto& c : cases) {
    std::string message = build_error(c.key, "NoSuchThing");
    std::cout << "[ registry ] " << message << "\n";
    EXPECT_NE(message.find(c.key), std::string::npos) << message;
    EXPECT_NE(message.find("'NoSuchThing'"), std::string::npos) << message;
    EXPECT_NE(message.find("registered: " + c.registered), std::string::npos) << message;
  }
}

TEST(RegistryErrors, CloseNamesAreSuggested) {
  std::string message = build_error("MODEL.ROI_HEADS.NAME", "StandardROIHead");
  EXPECT_NE(message.find("did you mean 'StandardROIHeads'"), std::string::npos) << message;
  message = build_error("MODEL.BACKBONE.NAME", "build_resnet_fpn_backbon");
  EXPECT_NE(message.find("did you mean 'build_resnet_fpn_backbone'"), std::string::npos) << message;
}

}  // namespace
// RetinaNet's and CascadeROIHeads' settings detkit does not support are named by their key.
TEST(RegistryErrors, RetinaNetAndCascadeNameTheirBadSettings) {
  const std::vector<std::string> retinanet = {"MODEL.META_ARCHITECTURE", "RetinaNet",
                                              "MODEL.BACKBONE.NAME",
                                              "build_retinanet_resnet_fpn_backbone"};
  const std::vector<std::string> cascade = {"MODEL.ROI_HEADS.NAME", "CascadeROIHeads",
                                            "MODEL.ROI_BOX_HEAD.CLS_AGNOSTIC_BBOX_REG", "True"};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"MODEL.RETINANET.BBOX_REG_LOSS_TYPE", "l1"},
       "MODEL.RETINANET.BBOX_REG_LOSS_TYPE 'l1' is not a box regression loss"},
      {{"MODEL.RETINANET.NORM", "GN"}, "MODEL.RETINANET.NORM 'GN' is not supported yet"},
      {{"MODEL.RETINANET.PRIOR_PROB", "1.5"}, "MODEL.RETINANET.PRIOR_PROB must be in (0, 1)"},
      {{"MODEL.RETINANET.IN_FEATURES", "['p3', 'p9']"},
       "MODEL.RETINANET.IN_FEATURES: the backbone has no feature 'p9'"},
      {{"MODEL.ROI_BOX_HEAD.CLS_AGNOSTIC_BBOX_REG", "False"},
       "CascadeROIHeads needs MODEL.ROI_BOX_HEAD.CLS_AGNOSTIC_BBOX_REG True"},
      {{"MODEL.ROI_BOX_CASCADE_HEAD.IOUS", "[0.5, 0.6]"},
       "MODEL.ROI_BOX_CASCADE_HEAD.BBOX_REG_WEIGHTS has 3 entries for 2 stages"},
      {{"MODEL.ROI_BOX_CASCADE_HEAD.IOUS", "[0.4, 0.6, 0.7]"},
       "MODEL.ROI_BOX_CASCADE_HEAD.IOUS[0] must equal MODEL.ROI_HEADS.IOU_THRESHOLDS[0]"},
  };
  for (const auto& [setting, expected] : cases) {
    std::vector<std::string> overrides =
        setting[0].rfind("MODEL.RETINANET.", 0) == 0 ? retinanet : cascade;
    overrides.insert(overrides.end(), setting.begin(), setting.end());
    const std::string message = build_error(overrides);
    EXPECT_NE(message.find(expected), std::string::npos) << expected << "\n got: " << message;
  }
}

TEST(RegistryErrors, KeypointHeadNamesItsBadSettings) {
  for (const auto& [setting, expected] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS", "0"},
            "MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS must be positive, got 0"},
           {{"MODEL.ROI_KEYPOINT_HEAD.NAME", "KRCNNHead"}, "MODEL.ROI_KEYPOINT_HEAD.NAME"}}) {
    std::vector<std::string> overrides = {"MODEL.KEYPOINT_ON", "True"};
    overrides.insert(overrides.end(), setting.begin(), setting.end());
    const std::string message = build_error(overrides);
    EXPECT_NE(message.find(expected), std::string::npos) << expected << "\n got: " << message;
  }
}

}  // namespace detkit::modeling

namespace detkit::modeling {
namespace {

// The semantic head's settings it cannot use are named by their key; a training input without
// semantic labels is named by its file.
TEST(RegistryErrors, SemanticHeadNamesItsBadSettingsAndMissingTargets) {
  const std::vector<std::string> semantic = {"MODEL.META_ARCHITECTURE", "SemanticSegmentor"};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"MODEL.SEM_SEG_HEAD.IN_FEATURES", "['p9']"},
       "MODEL.SEM_SEG_HEAD.IN_FEATURES: the backbone has no feature 'p9'"},
      {{"MODEL.SEM_SEG_HEAD.COMMON_STRIDE", "3"},
       "which 2x upsamplings cannot bring to MODEL.SEM_SEG_HEAD.COMMON_STRIDE 3"},
      {{"MODEL.SEM_SEG_HEAD.NUM_CLASSES", "0"},
       "MODEL.SEM_SEG_HEAD.NUM_CLASSES is 0: it must be positive"},
      {{"MODEL.SEM_SEG_HEAD.NAME", "NoSuchHead"},
       "unknown semantic segmentation head (MODEL.SEM_SEG_HEAD.NAME) 'NoSuchHead'"},
  };
  for (const auto& [overrides, expected] : cases) {
    std::vector<std::string> all = semantic;
    all.insert(all.end(), overrides.begin(), overrides.end());
    std::string message = "no error";
    try {
      build_model(testing::small_config(all));
    } catch (const std::exception& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
  for (const char* arch : {"SemanticSegmentor", "PanopticFPN"}) {
    auto model = build_model(testing::small_config({"MODEL.META_ARCHITECTURE", arch}));
    model->train();
    structures::ModelInput input;
    input.image = at::zeros({3, 64, 64});
    input.file_name = "unlabelled.jpg";
    std::string message = "no error";
    try {
      model->losses({input});
    } catch (const std::exception& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(std::string(arch) + ": the training input unlabelled.jpg has no "
                                               "semantic-segmentation target"),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace detkit::modeling
