#pragma once
// Config readers, as Detectron2's detectron2/solver/build.py: the optimizer (parameter groups,
// SGD, gradient clipping) and the LR schedule from SOLVER.*.
#include <torch/nn/module.h>

#include <memory>

#include "detkit/config/cfg_node.h"
#include "detkit/solver/grad_clip.h"
#include "detkit/solver/lr_scheduler.h"
#include "detkit/solver/param_groups.h"
#include "detkit/solver/sgd.h"

namespace detkit::solver {

/// SOLVER.BASE_LR, WEIGHT_DECAY_NORM, BIAS_LR_FACTOR, WEIGHT_DECAY_BIAS (as Detectron2's
/// build_optimizer: the group default weight decay comes from the optimizer, not the groups).
ParamGroupOptions param_group_options_from_config(const config::CfgNode& cfg);
/// SOLVER.BASE_LR, MOMENTUM, NESTEROV, WEIGHT_DECAY.
SGDOptions sgd_options_from_config(const config::CfgNode& cfg);
/// SOLVER.CLIP_GRADIENTS.{CLIP_TYPE, CLIP_VALUE, NORM_TYPE}.
GradientClipOptions gradient_clip_options_from_config(const config::CfgNode& cfg);

/// SGD over get_default_optimizer_params(model), clipping each parameter's gradient when
/// SOLVER.CLIP_GRADIENTS.ENABLED.
std::unique_ptr<SGD> build_optimizer(const config::CfgNode& cfg, const torch::nn::Module& model);

/// The LR multiplier schedule of SOLVER.LR_SCHEDULER_NAME (WarmupMultiStepLR, WarmupCosineLR,
/// WarmupStepWithFixedGammaLR) with SOLVER.WARMUP_* and RESCALE_INTERVAL. STEPS beyond MAX_ITER
/// are dropped with a warning. An unknown name is a detkit::Error listing the valid ones.
ParamSchedulerPtr build_lr_multiplier(const config::CfgNode& cfg);

/// LRMultiplier(optimizer, build_lr_multiplier(cfg), SOLVER.MAX_ITER).
std::unique_ptr<LRMultiplier> build_lr_scheduler(const config::CfgNode& cfg,
                                                 Optimizer& optimizer);

}  // namespace detkit::solver
