// detkit train: Detectron2's train_net.py — train a model from a config (or evaluate one with
// --eval-only), with trailing KEY VALUE overrides.
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>

#include "detkit/checkpoint/checkpointer.h"
#include "detkit/config/defaults.h"
#include "detkit/distributed/gloo_communicator.h"
#include "detkit/engine/defaults.h"
#include "detkit/utils/error.h"
#include "tools/commands.h"

namespace detkit::tools {

CommandRunner add_train_command(CLI::App& app) {
  struct Options {
    std::string config_file;
    bool resume = false, eval_only = false;
    int num_gpus = 1, num_machines = 1, machine_rank = 0;
    std::string dist_url = "auto";
    std::vector<std::string> overrides;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("train", "Train a model from a config, then evaluate it");
  cmd->add_option("--config-file", o->config_file, "Detectron2-style YAML config")->required();
  cmd->add_flag("--resume", o->resume,
                "continue from OUTPUT_DIR/last_checkpoint (model, optimizer, schedule, iteration); "
                "without it MODEL.WEIGHTS initialises the model and training starts at 0");
  cmd->add_flag("--eval-only", o->eval_only,
                "evaluate MODEL.WEIGHTS (or the last checkpoint with --resume) on DATASETS.TEST");
  cmd->add_option("--num-gpus", o->num_gpus, "worker processes per machine (one per device)");
  cmd->add_option("--num-machines", o->num_machines, "machines taking part");
  cmd->add_option("--machine-rank", o->machine_rank, "this machine's rank, 0..num-machines-1");
  cmd->add_option("--dist-url", o->dist_url,
                  "rendezvous: 'auto' (a free local port) or tcp://host:port for several machines");
  accept_overrides(cmd,
                   "KEY VALUE config overrides, e.g. SOLVER.IMS_PER_BATCH 2 SOLVER.BASE_LR 0.0025");
  cmd->footer(
      "Examples:\n"
      "  detkit train --config-file configs/quick/mask_rcnn_R_18_FPN_shapes.yaml\n"
      "  detkit train --config-file configs/quick/mask_rcnn_R_18_FPN_shapes.yaml --resume\n"
      "  detkit train --config-file X.yaml --eval-only MODEL.WEIGHTS output/model_final.pth\n");
  return [cmd, o]() {
    if (!*cmd) return -1;
    o->overrides = overrides_of(*cmd);
    if (o->num_gpus > 1 || o->num_machines > 1)
      throw Error(
          "--num-gpus > 1 and --num-machines > 1: detkit does not start its worker processes "
          "itself yet; start one `detkit train` per rank with torchrun, or with RANK, WORLD_SIZE, "
          "MASTER_ADDR and MASTER_PORT set (LOCAL_RANK, LOCAL_WORLD_SIZE optional)");
    if (o->machine_rank != 0) throw Error("--machine-rank must be 0 with one machine");
    // Started by torchrun (or anything that sets its variables): join the job first.
    distributed::init_from_environment();
    const config::CfgNode cfg = load_config(o->config_file, o->overrides);
    uint64_t seed = engine::default_setup(cfg);
    engine::ensure_builtin_datasets(cfg);
    if (o->eval_only) {
      auto model = modeling::build_model(cfg);
      checkpoint::Checkpointer checkpointer(model, cfg.get_string("OUTPUT_DIR"));
      checkpointer.resume_or_load(cfg.get_string("MODEL.WEIGHTS"), o->resume);
      engine::test(cfg, *model);
      return 0;
    }
    engine::DefaultTrainer trainer(cfg, seed);
    trainer.resume_or_load(o->resume);
    trainer.train();
    return 0;
  };
}

}  // namespace detkit::tools
