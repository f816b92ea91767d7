// No config key is silently ignored. Walking Detectron2's defaults tree, every key is
//  - read by the code that trains, evaluates and predicts (recorded while a tiny Mask R-CNN
//    trains an iteration, checkpoints, evaluates and predicts, while a RetinaNet, a Cascade
//    R-CNN and a Keypoint R-CNN are built, and while the optimizer and each LR schedule are built
//    with the settings that read their options), or
//  - refused when set (config/unimplemented.h; tests/config/test_unimplemented.cpp sets each), or
//  - an option of a component whose selection is refused: each is listed with the setting that
//    selects it, and building with that setting is shown to fail, or
//  - GLOBAL.HACK, which Detectron2 itself never reads (a slot for users' own code).
#include <gtest/gtest.h>

#include "detkit/config/unimplemented.h"
#include "detkit/data/dataset_mapper.h"
#include "detkit/data/detection_dataset.h"
#include "detkit/data/loader.h"
#include "detkit/data/metadata.h"
#include "detkit/data/proposal_file.h"
#include "detkit/engine/defaults.h"
#include "detkit/engine/precise_bn.h"
#include "detkit/engine/predictor.h"
#include "detkit/solver/build.h"
#include "detkit/utils/error.h"
#include "tests/modeling/meta_arch/small_model.h"
#include "tests/support/tiny_shapes.h"

namespace detkit::engine {
namespace {

std::set<std::string> keys_read_by_a_run() {
  testing::TinySetup setup("config_keys_read");
  config::CfgNode cfg = testing::tiny_config(setup, "config_keys_read");
  cfg.merge_from_list({"SOLVER.MAX_ITER", "1", "SOLVER.CHECKPOINT_PERIOD", "1"});
  config::KeyReadRecorder recorder;
  const uint64_t seed = default_setup(cfg);
  ensure_builtin_datasets(cfg);
  DefaultTrainer trainer(cfg, seed);
  trainer.resume_or_load(false);
  trainer.train();  // one step, a checkpoint, an evaluation on DATASETS.TEST
  config::CfgNode infer = cfg;
  infer.merge_from_list({"MODEL.WEIGHTS", cfg.get_string("OUTPUT_DIR") + "/model_final.pth"});
  DefaultPredictor predictor(infer);
  predictor(setup.dir.path("datasets/shapes/val/000001.jpg"));
  // Options read only under another setting, which detkit implements.
  config::CfgNode retinanet = cfg;  // RetinaNet reads MODEL.RETINANET.* when it is built
  retinanet.merge_from_list({"MODEL.META_ARCHITECTURE", "RetinaNet", "MODEL.BACKBONE.NAME",
                             "build_retinanet_resnet_fpn_backbone"});
  modeling::build_model(retinanet);
  config::CfgNode cascade = cfg;  // and CascadeROIHeads MODEL.ROI_BOX_CASCADE_HEAD.*
  cascade.merge_from_list({"MODEL.ROI_HEADS.NAME", "CascadeROIHeads",
                           "MODEL.ROI_BOX_HEAD.CLS_AGNOSTIC_BBOX_REG", "True"});
  modeling::build_model(cascade);
  // The federated loss reads MODEL.ROI_BOX_HEAD.FED_LOSS_* (with counts for the train datasets).
  for (const std::string& name : cfg.get_string_list("DATASETS.TRAIN"))
    data::global_metadata().get(name).class_image_count.assign(
        cfg.get_int("MODEL.ROI_HEADS.NUM_CLASSES"), 1);
  config::CfgNode fed = cfg;
  fed.merge_from_list(
      {"MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE", "True", "MODEL.ROI_BOX_HEAD.USE_FED_LOSS", "True"});
  modeling::build_model(fed);
  config::CfgNode panoptic = cfg;  // PanopticFPN reads MODEL.PANOPTIC_FPN.* and SEM_SEG_HEAD.*
  panoptic.merge_from_list({"MODEL.META_ARCHITECTURE", "PanopticFPN", "MODEL.MASK_ON", "True"});
  modeling::build_model(panoptic);
  config::CfgNode keypoint = cfg;  // Keypoint R-CNN reads MODEL.ROI_KEYPOINT_HEAD.*
  keypoint.merge_from_list({"MODEL.KEYPOINT_ON", "True", "MODEL.ROI_HEADS.NUM_CLASSES", "1"});
  modeling::build_model(keypoint);
  data::train_load_options_from_config(keypoint);
  // A ResNet-50 with deformable 3x3s (Detectron2's defaults otherwise) reads
  // MODEL.RESNETS.DEFORM_*.
  config::CfgNode deform = config::get_cfg();
  deform.merge_from_list({"MODEL.RESNETS.DEFORM_ON_PER_STAGE", "[False, True, True, False]",
                          "MODEL.RESNETS.DEFORM_MODULATED", "True"});  // res5: the C4 head's
  modeling::build_model(deform);
  // The loaders with precomputed proposals (each image of the datasets given one proposal) read
  // DATASETS.PROPOSAL_FILES_* and PRECOMPUTED_PROPOSAL_TOPK_*.
  config::CfgNode proposals = cfg;
  std::vector<std::string> files;
  for (const auto& names :
       {cfg.get_string_list("DATASETS.TRAIN"), cfg.get_string_list("DATASETS.TEST")}) {
    const data::DetectionDataset dataset = data::get_detection_dataset(names);
    std::vector<data::ImageProposals> one_each;
    for (size_t i = 0; i < dataset.size(); ++i) {
      const auto at = dataset.at(i);
      one_each.push_back({at.dataset->image(at.image_index).id,
                          at::tensor({1.f, 1.f, 20.f, 20.f}).view({1, 4}), at::ones({1})});
    }
    files.push_back(setup.dir.path("proposals_" + std::to_string(files.size()) + ".pkl"));
    data::write_proposal_file(files.back(), one_each);
  }
  proposals.merge_from_list({"MODEL.LOAD_PROPOSALS", "True", "DATASETS.PROPOSAL_FILES_TRAIN",
                             "('" + files[0] + "',)", "DATASETS.PROPOSAL_FILES_TEST",
                             "('" + files[1] + "',)"});
  EXPECT_TRUE(data::build_detection_train_loader(proposals, 0, 1)->next_batch().front().proposals);
  data::build_detection_test_loader(proposals, cfg.get_string_list("DATASETS.TEST").front());
  config::CfgNode precise_bn = cfg;  // TEST.PRECISE_BN.NUM_ITER, read when precise BN is on
  precise_bn.merge_from_list({"TEST.PRECISE_BN.ENABLED", "True"});
  build_precise_bn_hook(precise_bn, *trainer.model(), seed, 0);
  config::CfgNode crop = cfg;  // INPUT.CROP.TYPE and SIZE, read when the training crop is on
  crop.merge_from_list({"INPUT.CROP.ENABLED", "True"});
  data::dataset_mapper_options_from_config(crop, true);
  config::CfgNode clip = cfg;
  clip.merge_from_list({"SOLVER.CLIP_GRADIENTS.ENABLED", "True"});
  solver::build_optimizer(clip, *trainer.model());
  for (const char* schedule : {"WarmupCosineLR", "WarmupStepWithFixedGammaLR"}) {
    config::CfgNode s = cfg;
    s.merge_from_list({"SOLVER.LR_SCHEDULER_NAME", schedule});
    solver::build_lr_multiplier(s);
  }
  return recorder.keys();
}

// Options of components detkit does not have, with the setting that would select them.
struct SelectedAway {
  std::string prefix;  // every key starting with it
  std::vector<std::string> selection;
};
const std::vector<SelectedAway>& selected_away() {
  static const std::vector<SelectedAway> table = {
      {"MODEL.ANCHOR_GENERATOR.ANGLES", {"MODEL.ANCHOR_GENERATOR.NAME", "RotatedAnchorGenerator"}},
      {"TEST.AUG.", {"TEST.AUG.ENABLED", "True"}},
  };
  return table;
}

TEST(ConfigKeysRead, EveryDefaultKeyIsReadRefusedOrSelectedAway) {
  const std::set<std::string> read = keys_read_by_a_run();
  std::set<std::string> refused;
  for (const auto& k : config::unimplemented_keys()) refused.insert(k.key);
  size_t n_read = 0, n_refused = 0, away = 0;
  std::vector<std::string> ignored;
  for (const std::string& key : config::get_cfg().leaf_keys()) {
    if (refused.count(key)) {  // first: check_implemented() reads them to refuse them
      ++n_refused;
      continue;
    }
    if (read.count(key)) {
      ++n_read;
      continue;
    }
    if (key == "GLOBAL.HACK") continue;
    bool selected_away_key = false;
    for (const auto& s : selected_away())
      if (key.rfind(s.prefix, 0) == 0) selected_away_key = true;
    if (selected_away_key) {
      ++away;
      continue;
    }
    ignored.push_back(key);
  }
  std::cout << "[ config ] of " << config::get_cfg().leaf_keys().size() << " keys: " << n_read
            << " read, " << n_refused << " refused when set, " << away
            << " options of components whose selection is refused\n";
  for (const auto& key : ignored) ADD_FAILURE() << key << " is neither read nor refused";
}

TEST(ConfigKeysRead, SelectingAComponentDetkitDoesNotHaveIsRefused) {
  for (const auto& s : selected_away()) {
    const config::CfgNode cfg = testing::small_config(s.selection);
    try {
      modeling::build_model(cfg);
      data::dataset_mapper_options_from_config(cfg, /*is_train=*/true);
      ADD_FAILURE() << s.selection[0] << " " << s.selection[1] << " was accepted";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(s.selection[0]), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace detkit::engine
