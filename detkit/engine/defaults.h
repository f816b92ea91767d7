#pragma once
// What `detkit train` does with a config, as Detectron2's DefaultTrainer and default_setup:
// output folder with config.yaml and log.txt, seeding, the built-in shapes dataset made on first
// use, model + optimizer + LR schedule + loader + checkpointer + hooks, resume or MODEL.WEIGHTS,
// and evaluation on DATASETS.TEST.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "detkit/checkpoint/checkpointer.h"
#include "detkit/checkpoint/periodic_checkpointer.h"
#include "detkit/config/cfg_node.h"
#include "detkit/data/loader.h"
#include "detkit/engine/trainer.h"
#include "detkit/evaluation/coco_report.h"
#include "detkit/evaluation/evaluator.h"
#include "detkit/solver/amp.h"
#include "detkit/solver/grad_scaler.h"
#include "detkit/solver/lr_scheduler.h"
#include "detkit/solver/sgd.h"

namespace detkit::engine {

/// Creates OUTPUT_DIR, logs to OUTPUT_DIR/log.txt too, writes OUTPUT_DIR/config.yaml, and
/// returns the seed (SEED, or a random one when negative; logged).
uint64_t default_setup(const config::CfgNode& cfg);

/// Makes the synthetic shapes dataset under the datasets root when DATASETS.TRAIN or
/// DATASETS.TEST name shapes_train / shapes_val and it does not exist yet.
void ensure_builtin_datasets(const config::CfgNode& cfg);

/// The evaluators of dataset `name` (Detectron2's train_net.py build_evaluator), by its metadata's
/// evaluator_type: "coco" COCOEvaluator (bbox, plus segm / keypoints where MODEL.MASK_ON /
/// KEYPOINT_ON say); "sem_seg" SemSegEvaluator; "coco_panoptic_seg" all three, with
/// COCOPanopticEvaluator; "lvis" LVISEvaluator (the metadata's json_file, at most
/// TEST.DETECTIONS_PER_IMAGE detections per image). Files go to `output_dir` (none when empty).
/// Another type is an error.
std::unique_ptr<evaluation::DatasetEvaluator> build_evaluator(const config::CfgNode& cfg,
                                                              const std::string& name,
                                                              const data::DetectionDataset& dataset,
                                                              const std::string& output_dir);

/// Evaluates `model` on the dataset `name` as the test loader maps it (one image at a time,
/// INPUT.*_TEST) with build_evaluator's evaluators. Reports by task ("bbox", "segm",
/// "keypoints", "box_proposals", "sem_seg", "panoptic_seg").
std::map<std::string, evaluation::CocoEvalReport> evaluate_dataset(const config::CfgNode& cfg,
                                                                   modeling::MetaArch& model,
                                                                   const std::string& name,
                                                                   const std::string& output_dir);

/// Evaluates `model` on every DATASETS.TEST (bbox, plus segm with MODEL.MASK_ON; under autocast
/// in SOLVER.AMP.PRECISION when SOLVER.AMP.ENABLED, detections returned in fp32); results files
/// go to OUTPUT_DIR/inference/<dataset>/ (OUTPUT_DIR/inference/ when there is one dataset).
/// With several ranks each infers on its shard and rank 0 alone writes and returns the reports
/// (the other ranks get an empty report per dataset).
std::map<std::string, std::map<std::string, evaluation::CocoEvalReport>> test(
    const config::CfgNode& cfg, modeling::MetaArch& model);

/// Detectron2's EvalHook records the evaluation in the event storage (so in metrics.json and
/// TensorBoard): "bbox/AP", "segm/AP50", "bbox/AP-<class>", ... (x100; "<dataset>/bbox/AP" with
/// several test datasets), at the current iteration, unsmoothed. Ranks without reports (all but
/// rank 0) record nothing.
void put_evaluation_results(
    EventStorage& storage,
    const std::map<std::string, std::map<std::string, evaluation::CocoEvalReport>>& results);

class DefaultTrainer {
 public:
  DefaultTrainer(const config::CfgNode& cfg, uint64_t seed);
  /// --resume: continue from OUTPUT_DIR/last_checkpoint when there is one; otherwise load
  /// MODEL.WEIGHTS (when set) and start at iteration 0.
  void resume_or_load(bool resume);
  /// Hooks of the caller's (Detectron2's register_hooks): they run after detkit's own hooks,
  /// the metrics writers included, and before the preemption hook, in the order given.
  void register_hooks(const std::vector<std::shared_ptr<HookBase>>& hooks);
  void train();
  /// The loop train() runs (iter(), storage(), ...); nullptr before train().
  Trainer* trainer() { return trainer_.get(); }
  const std::shared_ptr<modeling::MetaArch>& model() const { return model_; }
  /// The config it trains with: the one given, scaled to the job by auto_scale_workers.
  const config::CfgNode& config() const { return cfg_; }
  /// The last evaluation's reports, by dataset and task.
  const std::map<std::string, std::map<std::string, evaluation::CocoEvalReport>>& results() const {
    return results_;
  }

 private:
  config::CfgNode cfg_;
  uint64_t seed_;
  std::shared_ptr<modeling::MetaArch> model_;
  std::unique_ptr<solver::SGD> optimizer_;
  solver::AmpOptions amp_;                      // SOLVER.AMP.*
  std::unique_ptr<solver::GradScaler> scaler_;  // when amp_.enabled
  std::unique_ptr<solver::LRMultiplier> scheduler_;
  std::unique_ptr<data::TrainLoader> loader_;
  std::unique_ptr<checkpoint::Checkpointer> checkpointer_;
  std::unique_ptr<checkpoint::PeriodicCheckpointer> periodic_;
  std::unique_ptr<Trainer> trainer_;
  std::vector<std::shared_ptr<HookBase>> user_hooks_;
  int64_t start_iter_ = 0;
  std::map<std::string, std::map<std::string, evaluation::CocoEvalReport>> results_;
};

}  // namespace detkit::engine
