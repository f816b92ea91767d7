#include "detkit/engine/defaults.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <random>

#include "detkit/data/catalog.h"
#include "detkit/data/metadata.h"
#include "detkit/data/shapes/shapes.h"
#include "detkit/distributed/comm.h"
#include "detkit/engine/amp_trainer.h"
#include "detkit/engine/hooks.h"
#include "detkit/engine/precise_bn.h"
#include "detkit/engine/tensorboard_writer.h"
#include "detkit/engine/training_visualization.h"
#include "detkit/engine/validation_loss.h"
#include "detkit/engine/writers.h"
#include "detkit/evaluation/coco_evaluator.h"
#include "detkit/evaluation/dataset_evaluators.h"
#include "detkit/evaluation/inference.h"
#include "detkit/evaluation/lvis_evaluator.h"
#include "detkit/evaluation/pascal_voc_evaluator.h"
#include "detkit/solver/auto_scale.h"
#include "detkit/solver/build.h"
#include "detkit/solver/state_ivalue.h"
#include "detkit/utils/autocast.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "detkit/utils/logging.h"
#include "detkit/utils/stop_signal.h"

namespace detkit::engine {

namespace fs = std::filesystem;

uint64_t default_setup(const config::CfgNode& cfg) {
  const std::string out = cfg.get_string("OUTPUT_DIR");
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw Error("OUTPUT_DIR: cannot create '" + out + "': " + ec.message());
  // As Detectron2's default_setup: one log per rank (log.txt on rank 0, log.txt.rank<N> on the
  // others), the config written by rank 0, the global generator seeded with seed + rank.
  const int rank = distributed::get_rank();
  setup_logging(out + "/log.txt" + (rank == 0 ? "" : ".rank" + std::to_string(rank)),
                /*console_info=*/rank == 0);
  const std::string how = distributed::communicator().description();
  spdlog::info("Rank {} of {} (local rank {} of {}){}, {} threads", rank,
               distributed::get_world_size(), distributed::get_local_rank(),
               distributed::get_local_size(), how.empty() ? "" : ", " + how, at::get_num_threads());
  if (distributed::is_main_process()) {
    atomic_write(out + "/config.yaml", cfg.dump());
    spdlog::info("Full config saved to {}/config.yaml", out);
  }
  int64_t seed = cfg.get_int("SEED");
  if (seed < 0) {
    // One random seed for the whole job (Detectron2's shared_random_seed): rank 0's.
    std::vector<at::Tensor> shared = {
        at::tensor({static_cast<int64_t>(std::random_device{}() & 0x7fffffff)})};
    distributed::communicator().broadcast(shared, 0);
    seed = shared[0].item<int64_t>();
    spdlog::info("SEED is negative: using seed {}", seed);
  }
  at::manual_seed(static_cast<uint64_t>(seed) + static_cast<uint64_t>(rank));
  at::globalContext().setBenchmarkCuDNN(cfg.get_bool("CUDNN_BENCHMARK"));  // no effect on CPU
  return static_cast<uint64_t>(seed);
}

namespace {
void make_missing_builtin_datasets(const config::CfgNode& cfg) {
  std::vector<std::string> names = cfg.get_string_list("DATASETS.TRAIN");
  for (const auto& n : cfg.get_string_list("DATASETS.TEST")) names.push_back(n);
  for (const auto& name : names) {
    if (name.rfind("shapes_", 0) != 0 || !data::global_catalog().contains(name)) continue;
    data::DatasetFiles files = data::global_catalog().get(name);
    // The panoptic names (shapes_*_panoptic*) have their own folder, made with stuff; their
    // panoptic file comes last, so its presence says the folder is whole ("_stuffonly" has no
    // instances file).
    data::ShapesOptions options;
    options.panoptic = !files.panoptic_json.empty();
    const std::string last = options.panoptic ? files.panoptic_json : files.json_file;
    if (fs::exists(last)) continue;
    options.out_dir = (fs::path(last).parent_path().parent_path()).string();
    spdlog::info("Making the synthetic shapes dataset{} in {} ({} train, {} val images)",
                 options.panoptic ? " on stuff (panoptic)" : "", options.out_dir, options.num_train,
                 options.num_val);
    data::make_shapes(options);
  }
}
}  // namespace

void ensure_builtin_datasets(const config::CfgNode& cfg) {
  // Rank 0 makes what is missing; the other ranks wait for it instead of writing the same files.
  if (distributed::is_main_process()) make_missing_builtin_datasets(cfg);
  distributed::synchronize();
}

std::unique_ptr<evaluation::DatasetEvaluator> build_evaluator(const config::CfgNode& cfg,
                                                              const std::string& name,
                                                              const data::DetectionDataset& dataset,
                                                              const std::string& output_dir) {
  // As Detectron2's train_net.py: by the dataset's evaluator_type, semantic segmentation first,
  // then COCO's (instances; a ProposalNetwork's proposals), then panoptic quality.
  const data::Metadata& metadata = data::global_metadata().get(name);
  const std::string type = metadata.evaluator_type.empty() ? "coco" : metadata.evaluator_type;
  if (type == "lvis") {  // LVISEvaluator(dataset_name, output_dir): tasks from the predictions
    if (metadata.json_file.empty())
      throw Error("dataset '" + name + "' has evaluator_type 'lvis' but no json_file");
    return std::make_unique<evaluation::LVISEvaluator>(
        metadata.json_file, std::vector<evaluation::IouType>{}, output_dir,
        cfg.get_int("TEST.DETECTIONS_PER_IMAGE"), metadata.thing_dataset_ids);
  }
  if (type != "coco" && type != "coco_panoptic_seg" && type != "sem_seg" && type != "pascal_voc")
    throw Error("dataset '" + name + "' has evaluator_type '" + type +
                "', which detkit has no evaluator for (coco, coco_panoptic_seg, sem_seg, "
                "pascal_voc, lvis)");
  std::vector<std::unique_ptr<evaluation::DatasetEvaluator>> evaluators;
  if (type == "pascal_voc") {
    if (dataset.parts().size() != 1)
      throw Error("DATASETS.TEST '" + name + "' must be one Pascal VOC dataset");
    const data::CocoDataset& voc = *dataset.parts().front();
    evaluation::PascalVOCEvaluatorOptions options{
        name, metadata.dirname, metadata.split, metadata.year, metadata.thing_classes,
        {},   output_dir};
    for (size_t i = 0; i < voc.num_images(); ++i)  // Detectron2's image_id: the file's stem
      options.image_ids.push_back(fs::path(std::string(voc.image(i).file_name)).stem().string());
    evaluators.push_back(
        std::make_unique<evaluation::PascalVOCDetectionEvaluator>(std::move(options)));
  }
  if (type == "sem_seg" || type == "coco_panoptic_seg")
    evaluators.push_back(
        std::make_unique<evaluation::SemSegDatasetEvaluator>(dataset, metadata, name, output_dir));
  if (type == "coco" || type == "coco_panoptic_seg") {
    std::vector<evaluation::IouType> tasks = {evaluation::IouType::Bbox};
    if (cfg.get_bool("MODEL.MASK_ON")) tasks.push_back(evaluation::IouType::Segm);
    if (cfg.get_bool("MODEL.KEYPOINT_ON")) tasks.push_back(evaluation::IouType::Keypoints);
    if (dataset.parts().size() != 1)
      throw Error("DATASETS.TEST '" + name + "' must be one COCO dataset");
    evaluators.push_back(std::make_unique<evaluation::COCOEvaluator>(
        dataset.parts().front(), tasks, output_dir,
        cfg.get_float_list("TEST.KEYPOINT_OKS_SIGMAS")));
  }
  if (type == "coco_panoptic_seg")
    evaluators.push_back(std::make_unique<evaluation::PanopticDatasetEvaluator>(dataset, metadata,
                                                                                name, output_dir));
  return std::make_unique<evaluation::DatasetEvaluators>(std::move(evaluators));
}

std::map<std::string, evaluation::CocoEvalReport> evaluate_dataset(const config::CfgNode& cfg,
                                                                   modeling::MetaArch& model,
                                                                   const std::string& name,
                                                                   const std::string& output_dir) {
  // Each rank infers on a contiguous shard; the evaluators gather to rank 0.
  auto loader = data::build_detection_test_loader(cfg, name, distributed::get_rank(),
                                                  distributed::get_world_size());
  auto evaluator = build_evaluator(cfg, name, loader->dataset(), output_dir);
  spdlog::info("Evaluating {}", name);
  const solver::AmpOptions amp = solver::amp_options_from_config(cfg);
  const AutocastGuard autocast(amp.enabled, amp.precision, amp.device);
  return evaluation::inference_on_dataset(model, *loader, *evaluator);
}

std::map<std::string, std::map<std::string, evaluation::CocoEvalReport>> test(
    const config::CfgNode& cfg, modeling::MetaArch& model) {
  std::map<std::string, std::map<std::string, evaluation::CocoEvalReport>> all;
  const auto names = cfg.get_string_list("DATASETS.TEST");
  for (const auto& name : names) {
    std::string out = cfg.get_string("OUTPUT_DIR") + "/inference";
    if (names.size() > 1) out += "/" + name;
    all[name] = evaluate_dataset(cfg, model, name, out);
  }
  return all;
}

void put_evaluation_results(
    EventStorage& storage,
    const std::map<std::string, std::map<std::string, evaluation::CocoEvalReport>>& results) {
  for (const auto& [dataset, tasks] : results)
    for (const auto& [task, report] : tasks)
      for (const auto& [metric, value] : evaluation::detectron2_results(report))
        storage.put_scalar((results.size() > 1 ? dataset + "/" : "") + task + "/" + metric, value,
                           /*smoothing_hint=*/false);
}

DefaultTrainer::DefaultTrainer(const config::CfgNode& cfg, uint64_t seed)
    // As Detectron2's: a config written for SOLVER.REFERENCE_WORLD_SIZE workers, scaled to this
    // job's (batch, LR, schedule); unchanged when the key is 0.
    : cfg_(solver::auto_scale_workers(cfg, distributed::get_world_size())), seed_(seed) {
  model_ = modeling::build_model(cfg_);
  optimizer_ = solver::build_optimizer(cfg_, *model_);
  amp_ = solver::amp_options_from_config(cfg_);
  if (amp_.enabled) scaler_ = std::make_unique<solver::GradScaler>(amp_.loss_scale);
  scheduler_ = solver::build_lr_scheduler(cfg_, *optimizer_);
  checkpointer_ = std::make_unique<checkpoint::Checkpointer>(model_, cfg_.get_string("OUTPUT_DIR"));
  periodic_ = std::make_unique<checkpoint::PeriodicCheckpointer>(
      *checkpointer_, cfg_.get_int("SOLVER.CHECKPOINT_PERIOD"), cfg_.get_int("SOLVER.MAX_ITER"));
}

void DefaultTrainer::resume_or_load(bool resume) {
  auto loaded = checkpointer_->resume_or_load(cfg_.get_string("MODEL.WEIGHTS"), resume);
  start_iter_ = 0;
  if (!loaded.resumed) return;
  const auto& state = loaded.state;
  if (state.count("optimizer")) optimizer_->load_state(state.at("optimizer"));
  if (state.count("scheduler"))
    scheduler_->load_state_dict(solver::scheduler_state_from_ivalue(state.at("scheduler")));
  if (scaler_ && state.count("grad_scaler"))
    scaler_->load_state_dict(solver::grad_scaler_state_from_ivalue(state.at("grad_scaler")));
  else if (scaler_)
    spdlog::info("{} has no grad_scaler (written without SOLVER.AMP): the loss scale starts at {}",
                 loaded.path, scaler_->scale());
  start_iter_ = loaded.iteration() + 1;
  spdlog::info("Resuming from {} at iteration {}", loaded.path, start_iter_);
  const int world = distributed::get_world_size();
  const bool other_world = state.count("world_size") && state.at("world_size").isInt() &&
                           state.at("world_size").toInt() != world;
  if (other_world && cfg_.get_bool("DATALOADER.WORLD_SIZE_INVARIANT"))
    spdlog::info(
        "{} was written by a job of {} ranks and resumes on {}: the global batches continue as "
        "they would have (DATALOADER.WORLD_SIZE_INVARIANT), now sliced over {} ranks",
        loaded.path, state.at("world_size").toInt(), world, world);
  else if (other_world)
    spdlog::warn(
        "{} was written by a job of {} ranks and resumes on {}: the training sampler is "
        "re-sharded over {} ranks, so from iteration {} the batches differ from those "
        "of an uninterrupted run (model, optimizer and schedule continue exactly)",
        loaded.path, state.at("world_size").toInt(), world, world, start_iter_);
}

void DefaultTrainer::register_hooks(const std::vector<std::shared_ptr<HookBase>>& hooks) {
  user_hooks_.insert(user_hooks_.end(), hooks.begin(), hooks.end());
}

void DefaultTrainer::train() {
  const int64_t max_iter = cfg_.get_int("SOLVER.MAX_ITER");
  // The batch stream depends only on the seed: a resumed run starts it where it stopped,
  // without decoding the images of the iterations already done.
  loader_ = data::build_detection_train_loader(cfg_, distributed::get_rank(),
                                               distributed::get_world_size(), seed_,
                                               std::min(start_iter_, max_iter));
  broadcast_weights_from_main(*model_);  // every rank starts from rank 0's weights
  trainer_ = build_trainer(
      amp_, scaler_.get(), model_, *optimizer_, [this] { return loader_->next_batch(); }, seed_);
  trainer_->set_pad_to_global_batch(loader_->options().world_size_invariant);
  trainer_->register_hook(std::make_shared<IterationTimer>());
  trainer_->register_hook(std::make_shared<LRSchedulerHook>(*scheduler_));
  // TEST.PRECISE_BN, where Detectron2's build_hooks puts it: before the checkpointer, which then
  // saves its statistics, and before the evaluation, which uses them.
  if (auto precise_bn = build_precise_bn_hook(cfg_, *model_, seed_, start_iter_))
    trainer_->register_hook(precise_bn);
  trainer_->register_hook(std::make_shared<PeriodicCheckpointerHook>(*periodic_, *scheduler_));
  // DATALOADER.ON_BAD_IMAGE skip: the samples the job replaced so far (every rank's loader).
  trainer_->register_hook(std::make_shared<SumOverRanksHook>(
      "data/bad_images", [this] { return static_cast<double>(loader_->bad_images_replaced()); }));
  if (const int64_t period = cfg_.get_int("TEST.VAL_LOSS_PERIOD"); period > 0)
    trainer_->register_hook(std::make_shared<ValidationLossHook>(cfg_, period));
  if (!cfg_.get_string_list("DATASETS.TEST").empty())
    trainer_->register_hook(
        std::make_shared<EvalHook>(cfg_.get_int("TEST.EVAL_PERIOD"), [this](Trainer& t) {
          results_ = test(cfg_, t.model());
          put_evaluation_results(t.storage(), results_);
        }));
  if (distributed::is_main_process()) {  // the job's metrics and console lines come from rank 0
    if (const int64_t period = cfg_.get_int("VIS_PERIOD"); period > 0)
      trainer_->register_hook(
          std::make_shared<TrainingVisualizationHook>(period, cfg_.get_string("INPUT.FORMAT")));
    trainer_->register_hook(
        std::make_shared<PeriodicWriter>(cfg_.get_string("OUTPUT_DIR") + "/metrics.json"));
    trainer_->register_hook(std::make_shared<TensorboardWriter>(cfg_.get_string("OUTPUT_DIR")));
  }
  for (const auto& hook : user_hooks_) trainer_->register_hook(hook);
  // Last, so that it sees a signal that came during any other hook (an evaluation).
  auto preemption = std::make_shared<PreemptionHook>(*checkpointer_, *scheduler_);
  trainer_->register_hook(preemption);
  if (start_iter_ >= max_iter) {
    spdlog::info("Training already finished ({} >= SOLVER.MAX_ITER {})", start_iter_, max_iter);
    return;
  }
  const StopSignalGuard stop_signals;  // SIGTERM / SIGINT: checkpoint after this step, exit
  trainer_->train(start_iter_, max_iter);
  if (trainer_->stopped_early())
    throw Preempted(fmt::format(
        "training stopped by {} after iteration {}{}; run the same command with --resume to "
        "continue",
        signal_name(preemption->stopped_by()), trainer_->iter(),
        preemption->saved().empty() ? "" : ", saved to " + preemption->saved()));
  distributed::synchronize();  // rank 0's last checkpoint is on disk before any rank returns
}

}  // namespace detkit::engine
