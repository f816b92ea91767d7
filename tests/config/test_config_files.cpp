// The configs in configs/ and Detectron2's own config dump load, dump and reload unchanged.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "detkit/config/defaults.h"
#include "tests/support/temp_dir.h"

namespace detkit::config {
namespace fs = std::filesystem;

namespace {
const std::string kConfigs = std::string(DETKIT_SOURCE_DIR) + "/configs/";
const std::string kDetectron2Dump =
    std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2/config.yaml";

void collect_yaml_leaf_keys(const YAML::Node& node, const std::string& prefix,
                            std::vector<std::string>& out) {
  for (const auto& entry : node) {
    std::string key = prefix + entry.first.as<std::string>();
    if (entry.second.IsMap())
      collect_yaml_leaf_keys(entry.second, key + ".", out);
    else
      out.push_back(key);
  }
}

CfgNode load(const std::string& path) {
  CfgNode cfg = get_cfg();
  cfg.merge_from_file(path);
  return cfg;
}
}  // namespace

TEST(ConfigFiles, BaseChainIsFollowed) {
  CfgNode cfg = load(kConfigs + "COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml");
  EXPECT_TRUE(cfg.get_bool("MODEL.MASK_ON"));
  EXPECT_EQ(cfg.get_string("MODEL.ROI_HEADS.NAME"), "StandardROIHeads");
  EXPECT_EQ(cfg.get_int_list("INPUT.MIN_SIZE_TRAIN"),
            (std::vector<int64_t>{640, 672, 704, 736, 768, 800}));
  EXPECT_EQ(cfg.get_string_list("DATASETS.TRAIN"), (std::vector<std::string>{"coco_2017_train"}));
  EXPECT_EQ(cfg.get_int_list("SOLVER.STEPS"), (std::vector<int64_t>{60000, 80000}));
  EXPECT_EQ(cfg.get("MODEL.ANCHOR_GENERATOR.SIZES").as_float_list_list().size(), 5u);

  CfgNode x101 = load(kConfigs + "COCO-Detection/faster_rcnn_X_101_32x8d_FPN_3x.yaml");
  EXPECT_FALSE(x101.get_bool("MODEL.RESNETS.STRIDE_IN_1X1"));
  EXPECT_EQ(x101.get_int("MODEL.RESNETS.NUM_GROUPS"), 32);
  EXPECT_EQ(x101.get_float_list("MODEL.PIXEL_STD"), (std::vector<double>{57.375, 57.120, 58.395}));
  EXPECT_EQ(x101.get_int("SOLVER.MAX_ITER"), 270000);

  CfgNode noaug = load(kConfigs + "Detectron1-Comparisons/mask_rcnn_R_50_FPN_noaug_1x.yaml");
  EXPECT_EQ(noaug.get_int_list("INPUT.MIN_SIZE_TRAIN"), (std::vector<int64_t>{800}));
  EXPECT_EQ(noaug.get_string("MODEL.ROI_MASK_HEAD.POOLER_TYPE"), "ROIAlign");
  EXPECT_EQ(noaug.get_float("MODEL.RPN.SMOOTH_L1_BETA"), 0.1111);
}

TEST(ConfigFiles, EveryConfigDumpsToYamlThatReloadsToTheSameTree) {
  testing::TempDir tmp("config_roundtrip");
  size_t count = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kConfigs)) {
    if (entry.path().extension() != ".yaml") continue;
    CfgNode cfg = load(entry.path().string());
    CfgNode reloaded = load(tmp.write("dump.yaml", cfg.dump()));
    EXPECT_EQ(reloaded, cfg) << entry.path();
    EXPECT_EQ(reloaded.dump(), cfg.dump()) << entry.path();
    ++count;
  }
  EXPECT_GE(count, 7u);
}

TEST(ConfigFiles, Detectron2DumpLoadsUnchangedWithTheSameKeys) {
  if (!fs::exists(kDetectron2Dump)) GTEST_SKIP() << "shared fixture absent: " << kDetectron2Dump;
  CfgNode cfg = load(kDetectron2Dump);
  EXPECT_EQ(cfg.get_int("MODEL.RESNETS.STEM_OUT_CHANNELS"), 16);
  EXPECT_EQ(cfg.get("MODEL.ROI_BOX_CASCADE_HEAD.BBOX_REG_WEIGHTS").as_float_list_list()[0],
            (std::vector<double>{10, 10, 5, 5}));  // read through a YAML alias
  // detkit's keys are exactly Detectron2's (none missing: loading would have failed) plus the
  // documented detkit_only_keys().
  std::vector<std::string> theirs;
  collect_yaml_leaf_keys(YAML::LoadFile(kDetectron2Dump), "", theirs);
  std::vector<std::string> expected = theirs;
  expected.insert(expected.end(), detkit_only_keys().begin(), detkit_only_keys().end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(cfg.leaf_keys(), expected);
  EXPECT_EQ(expected.size(), get_cfg().leaf_keys().size());
  for (const std::string& key : detkit_only_keys())
    EXPECT_EQ(std::count(theirs.begin(), theirs.end(), key), 0) << key << " is Detectron2's";
}

TEST(ConfigFiles, Detectron2DumpDiffersFromOurDefaultsOnlyWhereTheFixtureNarrowedIt) {
  if (!fs::exists(kDetectron2Dump)) GTEST_SKIP() << "shared fixture absent: " << kDetectron2Dump;
  CfgNode fixture = load(kDetectron2Dump);
  CfgNode ours = load(kConfigs + "COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml");
  std::set<std::string> differing;
  for (const auto& key : ours.leaf_keys())
    if (ours.get(key) != fixture.get(key)) differing.insert(key);
  // The fixture's README lists what it narrowed; everything else must be Detectron2's default.
  std::set<std::string> narrowed = {"MODEL.RESNETS.STEM_OUT_CHANNELS",
                                    "MODEL.RESNETS.WIDTH_PER_GROUP",
                                    "MODEL.RESNETS.RES2_OUT_CHANNELS",
                                    "MODEL.FPN.OUT_CHANNELS",
                                    "MODEL.ROI_BOX_HEAD.FC_DIM",
                                    "MODEL.ROI_MASK_HEAD.CONV_DIM",
                                    "INPUT.MIN_SIZE_TEST",
                                    "INPUT.MAX_SIZE_TEST",
                                    "INPUT.MIN_SIZE_TRAIN",
                                    "INPUT.MAX_SIZE_TRAIN",
                                    "INPUT.RANDOM_FLIP",
                                    "MODEL.RPN.BATCH_SIZE_PER_IMAGE",
                                    "MODEL.RPN.POSITIVE_FRACTION",
                                    "MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE",
                                    "MODEL.ROI_HEADS.POSITIVE_FRACTION",
                                    "MODEL.DEVICE",
                                    "MODEL.WEIGHTS"};
  for (const auto& key : differing)
    EXPECT_TRUE(narrowed.count(key))
        << key << ": ours " << ours.get(key).repr() << ", Detectron2's " << fixture.get(key).repr();
}

}  // namespace detkit::config
