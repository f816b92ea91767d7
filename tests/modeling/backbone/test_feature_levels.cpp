#include <gtest/gtest.h>

#include "detkit/config/defaults.h"
#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/utils/error.h"

namespace detkit::modeling {

TEST(FeatureLevels, StridesAndChannelsOrANamedError) {
  layers::ShapeSpecs shapes = {{"p2", {256, 4}}, {"p3", {256, 8}}, {"res5", {2048, 32}}};
  auto levels = feature_levels(shapes, {"p2", "p3"}, "KEY");
  EXPECT_EQ(levels.strides, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(levels.channels, 256);
  auto message = [&](std::vector<std::string> names) {
    try {
      feature_levels(shapes, names, "MODEL.RPN.IN_FEATURES");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({"p2", "p9"}), "MODEL.RPN.IN_FEATURES: the backbone has no feature 'p9'");
  EXPECT_EQ(message({"p2", "res5"}), "MODEL.RPN.IN_FEATURES must all have the same number of channels");
  EXPECT_EQ(message({}), "MODEL.RPN.IN_FEATURES must name at least one feature");
}

TEST(FeatureLevels, ModelBuildNamesTheBadConfigKey) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(std::string(DETKIT_SOURCE_DIR) + "/configs/Base-RCNN-FPN.yaml");
  cfg.merge_from_list({"MODEL.ROI_HEADS.IN_FEATURES", "['p2', 'p7']"});
  try {
    build_model(cfg);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("MODEL.ROI_HEADS.IN_FEATURES: the backbone has no feature 'p7'"),
              std::string::npos) << e.what();
  }
}

}  // namespace detkit::modeling
