// Files of Detectron2's config versions 0 and 1 are read with their keys upgraded to the latest
// names, as Detectron2's merge_from_file does; a version detkit does not know is refused.
#include <gtest/gtest.h>

#include "detkit/config/defaults.h"
#include "detkit/config/versions.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::config {
namespace {

using testing::error_of;
using testing::expect_contains;

CfgNode merged(testing::TempDir& tmp, const std::string& text, CfgNode cfg = get_cfg()) {
  cfg.merge_from_file(tmp.write("cfg.yaml", text));
  return cfg;
}

}  // namespace

TEST(ConfigVersions, VersionZeroKeysAreRenamedAndVersionStaysLatest) {
  testing::TempDir tmp("cfg_v0");
  CfgNode cfg = merged(tmp, "MODEL:\n  RPN_HEAD:\n    NAME: TEST\n  WEIGHT: w.pkl\nVERSION: 0\n");
  EXPECT_EQ(cfg.get_string("MODEL.RPN.HEAD_NAME"), "TEST");
  EXPECT_EQ(cfg.get_string("MODEL.WEIGHTS"), "w.pkl");
  EXPECT_EQ(cfg.get_int("VERSION"), kLatestConfigVersion);
}

TEST(ConfigVersions, FileWithoutVersionNamingAnOldKeyIsReadAsVersionOne) {
  testing::TempDir tmp("cfg_v1_guess");
  CfgNode cfg = merged(tmp,
                       "MODEL:\n  WEIGHT: /path/to/weight\n  ROI_HEADS:\n    SCORE_THRESH: 0.3\n"
                       "TEST:\n  DETECTIONS_PER_IMG: 50\n");
  EXPECT_EQ(cfg.get_string("MODEL.WEIGHTS"), "/path/to/weight");
  EXPECT_DOUBLE_EQ(cfg.get_float("MODEL.ROI_HEADS.SCORE_THRESH_TEST"), 0.3);
  EXPECT_EQ(cfg.get_int("TEST.DETECTIONS_PER_IMAGE"), 50);
  EXPECT_EQ(cfg.get_int("VERSION"), kLatestConfigVersion);
}

TEST(ConfigVersions, OldAnchorsGoToTheGeneratorOfTheFamilyInUse) {
  testing::TempDir tmp("cfg_v1_anchors");
  const std::string anchors =
      "  RPN:\n    ANCHOR_SIZES: [[16, 32]]\n"
      "  RETINANET:\n    ANCHOR_SIZES: [[64, 128]]\n    ANCHOR_ASPECT_RATIOS: [[1.0]]\n";
  CfgNode rcnn = merged(tmp, "VERSION: 1\nMODEL:\n" + anchors);
  EXPECT_EQ(rcnn.get("MODEL.ANCHOR_GENERATOR.SIZES").as_float_list_list(),
            (std::vector<std::vector<double>>{{16, 32}}));
  EXPECT_EQ(rcnn.get("MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS"),
            get_cfg().get("MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS"));
  CfgNode retina = merged(tmp, "VERSION: 1\nMODEL:\n  META_ARCHITECTURE: RetinaNet\n" + anchors);
  EXPECT_EQ(retina.get("MODEL.ANCHOR_GENERATOR.SIZES").as_float_list_list(),
            (std::vector<std::vector<double>>{{64, 128}}));
  EXPECT_EQ(retina.get("MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS").as_float_list_list(),
            (std::vector<std::vector<double>>{{1.0}}));
}

TEST(ConfigVersions, BaseFileVersionAppliesToTheChain) {
  testing::TempDir tmp("cfg_v1_base");
  tmp.write("base.yaml", "VERSION: 1\nMODEL:\n  WEIGHT: base.pkl\n");
  CfgNode cfg = merged(tmp, "_BASE_: base.yaml\nTEST:\n  AUG_FLIP: false\n");
  EXPECT_EQ(cfg.get_string("MODEL.WEIGHTS"), "base.pkl");
  EXPECT_FALSE(cfg.get_bool("TEST.AUG.FLIP"));
}

TEST(ConfigVersions, LatestFileKeepsOldNamesUnknown) {
  testing::TempDir tmp("cfg_v2_old_key");
  CfgNode cfg = get_cfg();
  const std::string message = error_of(
      [&] { cfg.merge_from_file(tmp.write("cfg.yaml", "VERSION: 2\nMODEL:\n  WEIGHT: w\n")); });
  expect_contains(message, "MODEL.WEIGHT");
  expect_contains(message, "cfg.yaml");
  EXPECT_EQ(cfg, get_cfg());  // all or nothing
}

TEST(ConfigVersions, UnknownOrMalformedVersionIsRefused) {
  testing::TempDir tmp("cfg_bad_version");
  CfgNode cfg = get_cfg();
  const std::string newer =
      error_of([&] { cfg.merge_from_file(tmp.write("new.yaml", "VERSION: 3\n")); });
  expect_contains(newer, "new.yaml has VERSION 3");
  expect_contains(newer, "versions 0 to 2");
  const std::string text =
      error_of([&] { cfg.merge_from_file(tmp.write("text.yaml", "VERSION: two\n")); });
  expect_contains(text, "text.yaml: VERSION must be an integer");
  const std::string unknown = error_of(
      [&] { cfg.merge_from_file(tmp.write("old.yaml", "VERSION: 0\nMODEL:\n  RPN_HED: 1\n")); });
  expect_contains(unknown, "MODEL.RPN_HED");
  expect_contains(unknown, "old.yaml");
}

TEST(ConfigVersions, UpgradeKeyFollowsEveryLaterRename) {
  EXPECT_EQ(upgrade_key("MODEL.RPN_HEAD.NAME", 0), "MODEL.RPN.HEAD_NAME");
  EXPECT_EQ(upgrade_key("MODEL.RPN_HEAD.NAME", 1), "MODEL.RPN_HEAD.NAME");
  EXPECT_EQ(upgrade_key("TEST.AUG_MAX_SIZE", 1), "TEST.AUG.MAX_SIZE");
  EXPECT_EQ(upgrade_key("TEST.AUG_MAX_SIZE", 2), "TEST.AUG_MAX_SIZE");
  EXPECT_EQ(upgraded_anchor_key("MODEL.RPN.ANCHOR_SIZES", "GeneralizedRCNN"),
            "MODEL.ANCHOR_GENERATOR.SIZES");
  EXPECT_EQ(upgraded_anchor_key("MODEL.RPN.ANCHOR_SIZES", "RetinaNet"), "");
  EXPECT_EQ(upgraded_anchor_key("MODEL.WEIGHTS", "RetinaNet"), "MODEL.WEIGHTS");
}

}  // namespace detkit::config
