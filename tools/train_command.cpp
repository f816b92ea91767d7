// detkit train: Detectron2's train_net.py — train a model from a config (or evaluate one with
// --eval-only), with trailing KEY VALUE overrides.
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>

#include "detkit/checkpoint/checkpointer.h"
#include "detkit/config/defaults.h"
#include "detkit/engine/defaults.h"
#include "detkit/utils/error.h"
#include "tools/commands.h"
#include "tools/launch_flags.h"

namespace detkit::tools {

CommandRunner add_train_command(CLI::App& app) {
  struct Options {
    std::string config_file;
    bool resume = false, eval_only = false;
    distributed::LaunchOptions launch;
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
  add_launch_flags(cmd, o->launch);
  accept_overrides(cmd,
                   "KEY VALUE config overrides, e.g. SOLVER.IMS_PER_BATCH 2 SOLVER.BASE_LR 0.0025");
  cmd->footer(
      "Examples:\n"
      "  detkit train --config-file configs/quick/mask_rcnn_R_18_FPN_shapes.yaml\n"
      "  detkit train --config-file configs/quick/mask_rcnn_R_18_FPN_shapes.yaml --resume\n"
      "  detkit train --config-file X.yaml --eval-only MODEL.WEIGHTS output/model_final.pth\n"
      "  detkit train --num-gpus 2 --config-file configs/quick/mask_rcnn_R_18_FPN_shapes.yaml\n"
      "  detkit train --num-machines 2 --machine-rank R --dist-url tcp://HOST0:29500 "
      "--num-gpus 8 --config-file X.yaml\n");
  return [cmd, o]() {
    if (!*cmd) return -1;
    o->overrides = overrides_of(*cmd);
    // Several processes: start them (this process then only supervises), or join the job.
    if (launch_or_join(o->launch)) return 0;
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
