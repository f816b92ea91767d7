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

TEST(RegistryErrors, UnknownNamesListTheRegisteredOnes) {
  const std::vector<Case> cases = {
      {"MODEL.META_ARCHITECTURE", "GeneralizedRCNN, RetinaNet"},
      {"MODEL.BACKBONE.NAME",
       "build_resnet_backbone, build_resnet_fpn_backbone, build_retinanet_resnet_fpn_backbone, "
       "build_retinanet_resnet_fpn_p5_backbone"},
      {"MODEL.PROPOSAL_GENERATOR.NAME", "RPN"},
      {"MODEL.ROI_HEADS.NAME", "CascadeROIHeads, StandardROIHeads"},
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
}  // namespace detkit::modeling
