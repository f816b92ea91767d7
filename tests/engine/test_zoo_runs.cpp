// Every model-zoo file of configs/ (Detectron2's 59, not Base-*, quick/ or
// Torchvision-Comparisons/) builds its model, trains one iteration and infers on one image, on
// coco_tiny at 64 px: a zoo file that stops loading or running fails here. Each takes the user's
// path: build_model, build_optimizer, build_detection_train_loader, one Trainer step (losses,
// backward, SGD step), then build_detection_test_loader and outputs() in eval mode, whose kind
// is checked against the file's family. The zoo's datasets (COCO, LVIS, Cityscapes, Pascal VOC)
// are replaced by what the file needs of coco_tiny: its instances (80 classes), its persons'
// synthetic keypoints, its synthetic panoptic ground truth (_separated for Panoptic FPN,
// _stuffonly for SemanticSegmentor), and a proposal file for Fast R-CNN; every setting runs as
// written (the X-152 file's INPUT.CROP included). A suite per group of folders, so CTest
// runs the groups in parallel; ZooRuns.EveryZooFileIsRun checks no file is left out.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "detkit/config/defaults.h"
#include "detkit/data/catalog.h"
#include "detkit/data/detection_dataset.h"
#include "detkit/data/loader.h"
#include "detkit/data/prepare_panoptic_fpn.h"
#include "detkit/data/proposal_file.h"
#include "detkit/engine/trainer.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/solver/build.h"
#include "tests/support/temp_dir.h"

namespace detkit::engine {
namespace {

const std::string kZooConfigs = std::string(DETKIT_SOURCE_DIR) + "/configs/";
const std::string kZooShared = std::string(DETKIT_SHARED_DIR);
const std::string kZooCocoTiny = kZooShared + "/data/coco_tiny/";
const std::string kZooKeypoints =
    kZooShared + "/fixtures/cocoeval_keypoints/person_keypoints_val2017_synth.json";
const std::string kZooPanoptic = kZooShared + "/fixtures/panoptic_pq/";

// Zoo files not run, with the reason: none.
const std::map<std::string, std::string> kZooNotRun = {};

// The model-zoo files: every .yaml of configs/ but Base-*, quick/ and Torchvision-Comparisons/
// (those are built by BuildConfigs and trained by cli.train.quick_*), sorted.
std::vector<std::string> zoo_files() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kZooConfigs)) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string name = std::filesystem::relative(entry.path(), kZooConfigs).string();
    if (name.rfind("quick/", 0) == 0 || name.rfind("Torchvision-Comparisons/", 0) == 0 ||
        entry.path().filename().string().rfind("Base-", 0) == 0)
      continue;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The suite that runs each folder (CTest runs one test per suite, in parallel).
const std::map<std::string, std::string>& zoo_suite_of_folder() {
  static const std::map<std::string, std::string> suites = {
      {"COCO-Detection", "ZooRunsCocoDetection"},
      {"COCO-InstanceSegmentation", "ZooRunsCocoInstanceSegmentation"},
      {"COCO-Keypoints", "ZooRunsKeypointsAndPanoptic"},
      {"COCO-PanopticSegmentation", "ZooRunsKeypointsAndPanoptic"},
      {"Cityscapes", "ZooRunsOtherDatasets"},
      {"LVISv0.5-InstanceSegmentation", "ZooRunsOtherDatasets"},
      {"LVISv1-InstanceSegmentation", "ZooRunsOtherDatasets"},
      {"PascalVOC-Detection", "ZooRunsOtherDatasets"},
      {"Detectron1-Comparisons", "ZooRunsOtherDatasets"},
      {"Misc", "ZooRunsMisc"},
  };
  return suites;
}

std::string zoo_folder(const std::string& name) { return name.substr(0, name.find('/')); }

bool zoo_data_present() {
  return std::filesystem::exists(kZooCocoTiny + "annotations/instances_train2017.json") &&
         std::filesystem::exists(kZooCocoTiny + "val2017") &&
         std::filesystem::exists(kZooKeypoints) &&
         std::filesystem::exists(kZooPanoptic + "panoptic_val2017_synth.json");
}

// Each image of `dataset` gets three boxes (whole image, its top-left quarter, its centre).
std::vector<data::ImageProposals> zoo_proposals_of(const std::string& dataset) {
  const data::DetectionDataset images = data::get_detection_dataset({dataset});
  std::vector<data::ImageProposals> proposals;
  for (size_t i = 0; i < images.size(); ++i) {
    const auto at = images.at(i);
    const auto& image = at.dataset->image(at.image_index);
    const float w = static_cast<float>(image.width), h = static_cast<float>(image.height);
    proposals.push_back(
        {image.id,
         at::tensor({0.f, 0.f, w, h, 0.f, 0.f, w / 2, h / 2, w / 4, h / 4, 3 * w / 4, 3 * h / 4})
             .view({3, 4}),
         at::tensor({2.f, 1.f, 0.f})});
  }
  return proposals;
}

// The datasets the zoo files run on, registered once per process: "zoo_tiny_{train,val}"
// (coco_tiny), "keypoints_coco_zoo_tiny" (the keypoints_coco_ prefix gives it Detectron2's person
// keypoint metadata), "zoo_tiny_panoptic_{separated,stuffonly}" (label maps written by
// prepare_panoptic_fpn), and a proposal file per coco_tiny split.
struct ZooData {
  testing::TempDir dir{"zoo_runs"};
  std::string proposals_train, proposals_val;
  ZooData() {
    data::register_coco_instances("zoo_tiny_train",
                                  kZooCocoTiny + "annotations/instances_train2017.json",
                                  kZooCocoTiny + "train2017");
    data::register_coco_instances("zoo_tiny_val",
                                  kZooCocoTiny + "annotations/instances_val2017.json",
                                  kZooCocoTiny + "val2017");
    data::register_coco_instances("keypoints_coco_zoo_tiny", kZooKeypoints,
                                  kZooCocoTiny + "val2017");
    const std::string stuff = dir.path("panoptic_stuff");
    data::prepare_panoptic_fpn(kZooPanoptic + "panoptic_val2017_synth.json",
                               kZooPanoptic + "panoptic_val2017_synth", stuff);
    data::register_coco_panoptic_separated("zoo_tiny_panoptic", kZooCocoTiny + "val2017",
                                           kZooPanoptic + "panoptic_val2017_synth",
                                           kZooPanoptic + "panoptic_val2017_synth.json", stuff,
                                           kZooCocoTiny + "annotations/instances_val2017.json");
    proposals_train = dir.path("proposals_train.pkl");
    proposals_val = dir.path("proposals_val.pkl");
    data::write_proposal_file(proposals_train, zoo_proposals_of("zoo_tiny_train"));
    data::write_proposal_file(proposals_val, zoo_proposals_of("zoo_tiny_val"));
  }
};

const ZooData& zoo_data() {
  static const ZooData data;
  return data;
}

// A small run of any zoo file: 64 px images, one per batch, few anchors, proposals and
// detections, no weights, no score threshold. Untrained (FrozenBN an identity), most files'
// activations grow to saturated scores and degenerate boxes, so they may detect nothing: the
// heads then run on no box, and the check is the kind of output, not its count.
const std::vector<std::string>& zoo_small_overrides() {
  static const std::vector<std::string> overrides = {"MODEL.WEIGHTS",
                                                     "",
                                                     "MODEL.DEVICE",
                                                     "cpu",
                                                     "SEED",
                                                     "1",
                                                     "INPUT.MAX_SIZE_TRAIN",
                                                     "96",
                                                     "INPUT.MIN_SIZE_TEST",
                                                     "64",
                                                     "INPUT.MAX_SIZE_TEST",
                                                     "96",
                                                     "SOLVER.IMS_PER_BATCH",
                                                     "1",
                                                     "SOLVER.MAX_ITER",
                                                     "1",
                                                     "DATALOADER.NUM_WORKERS",
                                                     "1",
                                                     "MODEL.RPN.BATCH_SIZE_PER_IMAGE",
                                                     "32",
                                                     "MODEL.RPN.PRE_NMS_TOPK_TRAIN",
                                                     "100",
                                                     "MODEL.RPN.POST_NMS_TOPK_TRAIN",
                                                     "32",
                                                     "MODEL.RPN.PRE_NMS_TOPK_TEST",
                                                     "50",
                                                     "MODEL.RPN.POST_NMS_TOPK_TEST",
                                                     "16",
                                                     "MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE",
                                                     "16",
                                                     "MODEL.ROI_HEADS.SCORE_THRESH_TEST",
                                                     "0.0",
                                                     "MODEL.RETINANET.SCORE_THRESH_TEST",
                                                     "0.0",
                                                     "MODEL.RETINANET.TOPK_CANDIDATES_TEST",
                                                     "50",
                                                     "TEST.DETECTIONS_PER_IMAGE",
                                                     "5"};
  return overrides;
}

// The file's datasets replaced by the coco_tiny one of its kind (and the classes by its).
std::string zoo_use_dataset(config::CfgNode& cfg, const ZooData& data) {
  const std::string arch = cfg.get_string("MODEL.META_ARCHITECTURE");
  std::string train, test;
  if (arch == "PanopticFPN" || arch == "SemanticSegmentor") {
    // The synthetic ground truth's stuff: 3 classes and "things" (COCO's: 53 and things).
    train = test =
        arch == "PanopticFPN" ? "zoo_tiny_panoptic_separated" : "zoo_tiny_panoptic_stuffonly";
    cfg.merge_from_list({"MODEL.SEM_SEG_HEAD.NUM_CLASSES", "4"});
  } else if (cfg.get_bool("MODEL.KEYPOINT_ON")) {
    train = test = "keypoints_coco_zoo_tiny";  // coco_tiny val's persons (1 class, as the zoo's)
  } else {
    train = "zoo_tiny_train";
    test = "zoo_tiny_val";
  }
  if (arch != "SemanticSegmentor" && !cfg.get_bool("MODEL.KEYPOINT_ON"))
    cfg.merge_from_list({"MODEL.ROI_HEADS.NUM_CLASSES", "80", "MODEL.RETINANET.NUM_CLASSES", "80"});
  cfg.merge_from_list(
      {"DATASETS.TRAIN", "('" + train + "',)", "DATASETS.TEST", "('" + test + "',)"});
  if (cfg.get_bool("MODEL.LOAD_PROPOSALS"))
    cfg.merge_from_list({"DATASETS.PROPOSAL_FILES_TRAIN", "('" + data.proposals_train + "',)",
                         "DATASETS.PROPOSAL_FILES_TEST", "('" + data.proposals_val + "',)"});
  return train == test ? train : train + " / " + test;
}

// One training step; returns the losses it recorded ("loss_cls 4.38 ...").
std::string zoo_train_one_step(const config::CfgNode& cfg,
                               const std::shared_ptr<modeling::MetaArch>& model) {
  auto optimizer = solver::build_optimizer(cfg, *model);
  auto loader = data::build_detection_train_loader(cfg, 0, 1, /*seed=*/1);
  Trainer trainer(
      model, *optimizer, [&] { return loader->next_batch(); }, /*seed=*/1);
  trainer.train(0, 1);  // a non-finite loss is an Error naming it
  std::string losses;
  for (const auto& [name, value] : trainer.storage().latest_with_smoothing_hint(1)) {
    if (name.rfind("loss_", 0) != 0) continue;
    EXPECT_TRUE(std::isfinite(value.first)) << name;
    losses += " " + name + " " + std::to_string(value.first).substr(0, 5);
  }
  EXPECT_FALSE(losses.empty()) << "no loss recorded";
  return losses;
}

bool zoo_has(const structures::ModelOutput& out, const std::string& field) {
  return out.instances && out.instances->has(field);
}

// Eval-mode outputs() on the first test image; checks the kind the architecture gives and
// returns what it held.
std::string zoo_infer_one_image(const config::CfgNode& cfg, modeling::MetaArch& model) {
  model.eval();
  auto loader = data::build_detection_test_loader(cfg, cfg.get_string_list("DATASETS.TEST")[0]);
  auto sample = loader->next();
  EXPECT_TRUE(sample.has_value());
  if (!sample) return "no test image";
  at::InferenceMode inference_mode;
  const auto outputs = model.outputs({sample->input});
  EXPECT_EQ(outputs.size(), 1u);
  if (outputs.size() != 1) return "no output";
  const structures::ModelOutput& out = outputs[0];
  const std::string arch = cfg.get_string("MODEL.META_ARCHITECTURE");
  std::vector<std::string> want;
  if (arch == "ProposalNetwork") want = {"proposal_boxes", "objectness_logits"};
  if (arch == "GeneralizedRCNN" || arch == "RetinaNet" || arch == "PanopticFPN")
    want = {"pred_boxes", "scores", "pred_classes"};
  if (cfg.get_bool("MODEL.MASK_ON")) want.push_back("pred_masks");
  if (cfg.get_bool("MODEL.KEYPOINT_ON")) want.push_back("pred_keypoints");
  std::string held;
  for (const auto& field : want) {
    EXPECT_TRUE(zoo_has(out, field)) << arch << " gave no " << field;
    held += " " + field;
  }
  if (out.instances) held = std::to_string(out.instances->size()) + " instances:" + held;
  if (arch == "SemanticSegmentor" || arch == "PanopticFPN") {
    EXPECT_TRUE(out.sem_seg.has_value()) << arch << " gave no sem_seg";
    if (out.sem_seg) {
      EXPECT_EQ(out.sem_seg->size(0), cfg.get_int("MODEL.SEM_SEG_HEAD.NUM_CLASSES"));
      held += " sem_seg";
    }
  }
  if (arch == "PanopticFPN") {
    EXPECT_TRUE(out.panoptic_seg.has_value()) << "PanopticFPN gave no panoptic_seg";
    if (out.panoptic_seg)
      held += " panoptic_seg (" + std::to_string(out.panoptic_seg->segments.size()) + " segments)";
  }
  return held;
}

// Builds, trains a step and infers with one zoo file; prints what ran and how long it took.
void zoo_run(const std::string& name) {
  const auto start = std::chrono::steady_clock::now();
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(kZooConfigs + name);
  cfg.merge_from_list(zoo_small_overrides());
  // A "range" of sizes (the X-152 file's) takes two: 56 to 64 px.
  const bool range = cfg.get_string("INPUT.MIN_SIZE_TRAIN_SAMPLING") == "range";
  cfg.merge_from_list({"INPUT.MIN_SIZE_TRAIN", range ? "(56, 64)" : "(64,)"});
  const std::string dataset = zoo_use_dataset(cfg, zoo_data());
  const auto model = modeling::build_model(cfg);
  const std::string losses = zoo_train_one_step(cfg, model);
  const std::string outputs = zoo_infer_one_image(cfg, *model);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ zoo ] " << name << " (" << cfg.get_string("MODEL.META_ARCHITECTURE") << ", "
            << dataset << "): losses" << losses << "; " << outputs << "; "
            << std::to_string(seconds).substr(0, 4) << " s\n"
            << std::flush;
}

// Runs every zoo file of the folders the current suite covers.
void zoo_run_suite() {
  // One intra-op thread: under ctest -j2 on two cores, OpenMP's threads spin waiting for a
  // descheduled peer (20 times slower here); the 64 px inputs gain nothing from a second one.
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  struct Restore {
    int n;
    ~Restore() { at::set_num_threads(n); }
  } restore{threads};
  const std::string suite =
      ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name();
  if (!zoo_data_present())
    GTEST_SKIP() << "shared data absent: " << kZooCocoTiny << ", " << kZooKeypoints << ", "
                 << kZooPanoptic;
  int run = 0;
  for (const std::string& name : zoo_files()) {
    const auto it = zoo_suite_of_folder().find(zoo_folder(name));
    if (it == zoo_suite_of_folder().end() || it->second != suite || kZooNotRun.count(name))
      continue;
    SCOPED_TRACE(name);
    EXPECT_NO_THROW(zoo_run(name)) << name;
    ++run;
  }
  EXPECT_GT(run, 0) << suite << " ran no file";
}

}  // namespace

TEST(ZooRuns, EveryZooFileIsRun) {
  const std::vector<std::string> files = zoo_files();
  EXPECT_EQ(files.size(), 59u) << "Detectron2's zoo has 59 model files";
  for (const std::string& name : files) {
    if (kZooNotRun.count(name)) {
      std::cout << "[ zoo ] " << name << " not run: " << kZooNotRun.at(name) << "\n";
      continue;
    }
    EXPECT_TRUE(zoo_suite_of_folder().count(zoo_folder(name)))
        << name << " is neither run by a ZooRuns* suite nor listed in kZooNotRun with a reason";
  }
}

TEST(ZooRunsCocoDetection, EachFileTrainsAStepAndInfers) { zoo_run_suite(); }
TEST(ZooRunsCocoInstanceSegmentation, EachFileTrainsAStepAndInfers) { zoo_run_suite(); }
TEST(ZooRunsKeypointsAndPanoptic, EachFileTrainsAStepAndInfers) { zoo_run_suite(); }
TEST(ZooRunsOtherDatasets, EachFileTrainsAStepAndInfers) { zoo_run_suite(); }
TEST(ZooRunsMisc, EachFileTrainsAStepAndInfers) { zoo_run_suite(); }

}  // namespace detkit::engine
