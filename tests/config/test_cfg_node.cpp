#include <gtest/gtest.h>

#include <set>

#include "detkit/config/defaults.h"
#include "detkit/utils/error.h"

namespace detkit::config {

TEST(Defaults, HoldDetectron2Values) {
  CfgNode cfg = get_cfg();
  EXPECT_EQ(cfg.get_int("MODEL.RPN.POST_NMS_TOPK_TRAIN"), 2000);
  EXPECT_EQ(cfg.get_int("MODEL.RPN.PRE_NMS_TOPK_TEST"), 6000);
  EXPECT_EQ(cfg.get_float_list("MODEL.PIXEL_MEAN"), (std::vector<double>{103.530, 116.280, 123.675}));
  EXPECT_EQ(cfg.get_float_list("MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS"),
            (std::vector<double>{10, 10, 5, 5}));
  EXPECT_EQ(cfg.get_string("MODEL.RESNETS.NORM"), "FrozenBN");
  EXPECT_TRUE(cfg.get_bool("MODEL.RESNETS.STRIDE_IN_1X1"));
  EXPECT_EQ(cfg.get_float("SOLVER.WARMUP_FACTOR"), 0.001);
  EXPECT_TRUE(cfg.get("SOLVER.WEIGHT_DECAY_BIAS").is_null());
  EXPECT_EQ(cfg.get_int("VERSION"), 2);
  EXPECT_EQ(cfg.get_string("OUTPUT_DIR"), "./output");
}

TEST(CfgNode, OverridesParseToTheKeysType) {
  CfgNode cfg = get_cfg();
  cfg.merge_from_list({"SOLVER.BASE_LR", "0.0025", "SOLVER.IMS_PER_BATCH", "2",
                       "MODEL.MASK_ON", "True", "MODEL.DEVICE", "cpu",
                       "INPUT.MIN_SIZE_TRAIN", "(640, 672, 704)",
                       "MODEL.ANCHOR_GENERATOR.SIZES", "[[32], [64]]",
                       "DATASETS.TRAIN", "('shapes_train',)",
                       "SOLVER.WEIGHT_DECAY_BIAS", "0.0",
                       "MODEL.RPN.SMOOTH_L1_BETA", "1",  // an int widens to a float
                       "OUTPUT_DIR", "2024"});           // a string key keeps the text
  EXPECT_EQ(cfg.get_float("SOLVER.BASE_LR"), 0.0025);
  EXPECT_EQ(cfg.get_int("SOLVER.IMS_PER_BATCH"), 2);
  EXPECT_TRUE(cfg.get_bool("MODEL.MASK_ON"));
  EXPECT_EQ(cfg.get_string("MODEL.DEVICE"), "cpu");
  EXPECT_EQ(cfg.get_int_list("INPUT.MIN_SIZE_TRAIN"), (std::vector<int64_t>{640, 672, 704}));
  EXPECT_EQ(cfg.get("MODEL.ANCHOR_GENERATOR.SIZES").as_float_list_list().size(), 2u);
  EXPECT_EQ(cfg.get_string_list("DATASETS.TRAIN"), (std::vector<std::string>{"shapes_train"}));
  EXPECT_EQ(cfg.get_float("SOLVER.WEIGHT_DECAY_BIAS"), 0.0);
  EXPECT_EQ(cfg.get("MODEL.RPN.SMOOTH_L1_BETA").kind(), CfgValue::Kind::Float);
  EXPECT_EQ(cfg.get_string("OUTPUT_DIR"), "2024");
  cfg.merge_from_list({"SOLVER.WEIGHT_DECAY_BIAS", "None"});
  EXPECT_TRUE(cfg.get("SOLVER.WEIGHT_DECAY_BIAS").is_null());
}

TEST(KeyReadRecorder, RecordsTheKeysReadWhileItLivesOneAtATime) {
  const CfgNode cfg = get_cfg();
  cfg.get_int("SOLVER.MAX_ITER");  // before: not recorded
  std::set<std::string> keys;
  {
    KeyReadRecorder recorder;
    EXPECT_THROW(KeyReadRecorder second, Error);
    cfg.get_float("SOLVER.BASE_LR");
    CfgNode copy = cfg;
    copy.get_string_list("DATASETS.TRAIN");
    keys = recorder.keys();
  }
  EXPECT_EQ(keys, (std::set<std::string>{"DATASETS.TRAIN", "SOLVER.BASE_LR"}));
  KeyReadRecorder again;  // the first one is gone
  EXPECT_TRUE(again.keys().empty());
}

TEST(CfgNode, CopiesAreIndependentAndFreezeStopsChanges) {
  CfgNode a = get_cfg();
  CfgNode b = a;
  b.set("SOLVER.MAX_ITER", CfgValue(10));
  EXPECT_EQ(a.get_int("SOLVER.MAX_ITER"), 40000);
  EXPECT_NE(a, b);
  b.freeze();
  EXPECT_THROW(b.set("SOLVER.MAX_ITER", CfgValue(20)), std::exception);
  EXPECT_THROW(b.merge_from_list({"SOLVER.MAX_ITER", "20"}), std::exception);
  EXPECT_EQ(b.get_int("SOLVER.MAX_ITER"), 10);
  EXPECT_EQ(get_cfg(), a);  // the defaults themselves never change
}

TEST(CfgNode, SectionsAndLeafKeys) {
  CfgNode cfg = get_cfg();
  EXPECT_TRUE(cfg.has("MODEL.RPN"));
  EXPECT_TRUE(cfg.has("MODEL.RPN.NMS_THRESH"));
  EXPECT_FALSE(cfg.has("MODEL.RPN.NMS"));
  EXPECT_EQ(cfg.section("MODEL.RPN").get_float("NMS_THRESH"), 0.7);
  auto keys = cfg.leaf_keys();
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_NE(std::find(keys.begin(), keys.end(), "SOLVER.CLIP_GRADIENTS.CLIP_TYPE"), keys.end());
}

}  // namespace detkit::config
