#include "detkit/solver/build.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

ParamSchedulerPtr main_schedule(const config::CfgNode& cfg, const std::string& name) {
  const int64_t max_iter = cfg.get_int("SOLVER.MAX_ITER");
  if (name == "WarmupMultiStepLR") {
    const std::vector<int64_t> all_steps = cfg.get_int_list("SOLVER.STEPS");
    std::vector<int64_t> steps;
    std::copy_if(all_steps.begin(), all_steps.end(), std::back_inserter(steps),
                 [max_iter](int64_t s) { return s <= max_iter; });
    if (steps.size() != all_steps.size()) {
      spdlog::warn(
          "SOLVER.STEPS contains values larger than SOLVER.MAX_ITER. These values will be "
          "ignored.");
    }
    const double gamma = cfg.get_float("SOLVER.GAMMA");
    std::vector<double> values;
    for (size_t k = 0; k <= steps.size(); ++k) values.push_back(std::pow(gamma, double(k)));
    return std::make_shared<MultiStepParamScheduler>(std::move(values), max_iter, std::move(steps));
  }
  if (name == "WarmupCosineLR") {
    const double end_value = cfg.get_float("SOLVER.BASE_LR_END") / cfg.get_float("SOLVER.BASE_LR");
    if (!(end_value >= 0.0 && end_value <= 1.0)) {
      throw Error("SOLVER.BASE_LR_END / SOLVER.BASE_LR must be in [0, 1] for WarmupCosineLR, got " +
                  std::to_string(end_value));
    }
    return std::make_shared<CosineParamScheduler>(1.0, end_value);
  }
  if (name == "WarmupStepWithFixedGammaLR") {
    return std::make_shared<StepWithFixedGammaParamScheduler>(
        1.0, cfg.get_int("SOLVER.NUM_DECAYS"), cfg.get_float("SOLVER.GAMMA"), max_iter);
  }
  throw Error("unknown SOLVER.LR_SCHEDULER_NAME '" + name +
              "'; valid: WarmupMultiStepLR, WarmupCosineLR, WarmupStepWithFixedGammaLR");
}

}  // namespace

ParamGroupOptions param_group_options_from_config(const config::CfgNode& cfg) {
  ParamGroupOptions options;
  options.base_lr = cfg.get_float("SOLVER.BASE_LR");
  options.weight_decay_norm = cfg.get_float("SOLVER.WEIGHT_DECAY_NORM");
  options.bias_lr_factor = cfg.get_float("SOLVER.BIAS_LR_FACTOR");
  if (!cfg.get("SOLVER.WEIGHT_DECAY_BIAS").is_null()) {
    options.weight_decay_bias = cfg.get_float("SOLVER.WEIGHT_DECAY_BIAS");
  }
  return options;
}

SGDOptions sgd_options_from_config(const config::CfgNode& cfg) {
  return SGDOptions(cfg.get_float("SOLVER.BASE_LR"))
      .momentum(cfg.get_float("SOLVER.MOMENTUM"))
      .nesterov(cfg.get_bool("SOLVER.NESTEROV"))
      .weight_decay(cfg.get_float("SOLVER.WEIGHT_DECAY"));
}

GradientClipOptions gradient_clip_options_from_config(const config::CfgNode& cfg) {
  return GradientClipOptions()
      .type(parse_gradient_clip_type(cfg.get_string("SOLVER.CLIP_GRADIENTS.CLIP_TYPE")))
      .clip_value(cfg.get_float("SOLVER.CLIP_GRADIENTS.CLIP_VALUE"))
      .norm_type(cfg.get_float("SOLVER.CLIP_GRADIENTS.NORM_TYPE"));
}

std::unique_ptr<SGD> build_optimizer(const config::CfgNode& cfg, const torch::nn::Module& model) {
  auto optimizer = std::make_unique<SGD>(
      get_default_optimizer_params(model, param_group_options_from_config(cfg)),
      sgd_options_from_config(cfg));
  if (cfg.get_bool("SOLVER.CLIP_GRADIENTS.ENABLED")) {
    optimizer->set_gradient_clipper(make_gradient_clipper(gradient_clip_options_from_config(cfg)));
  }
  return optimizer;
}

ParamSchedulerPtr build_lr_multiplier(const config::CfgNode& cfg) {
  const std::string name = cfg.get_string("SOLVER.LR_SCHEDULER_NAME");
  const int64_t max_iter = cfg.get_int("SOLVER.MAX_ITER");
  if (max_iter <= 0) {
    throw Error("SOLVER.MAX_ITER must be positive, got " + std::to_string(max_iter));
  }
  ParamSchedulerPtr schedule = main_schedule(cfg, name);
  const double warmup_length =
      std::min(double(cfg.get_int("SOLVER.WARMUP_ITERS")) / double(max_iter), 1.0);
  if (cfg.get_int("SOLVER.WARMUP_ITERS") > max_iter) {
    spdlog::warn(
        "SOLVER.WARMUP_ITERS ({}) exceeds SOLVER.MAX_ITER ({}): as in Detectron2, the warm-up "
        "is squeezed into this run and the LR reaches SOLVER.BASE_LR at its end, so these {} "
        "iterations are not the start of a longer run with the same WARMUP_ITERS",
        cfg.get_int("SOLVER.WARMUP_ITERS"), max_iter, max_iter);
  }
  const bool rescale = cfg.get_bool("SOLVER.RESCALE_INTERVAL");
  if (rescale && warmup_length >= 1.0) {
    // Detectron2 would divide by the zero length of the schedule after warm-up at the end.
    throw Error("SOLVER.RESCALE_INTERVAL needs SOLVER.WARMUP_ITERS (" +
                std::to_string(cfg.get_int("SOLVER.WARMUP_ITERS")) +
                ") smaller than SOLVER.MAX_ITER (" + std::to_string(max_iter) + ")");
  }
  return make_warmup_param_scheduler(std::move(schedule), cfg.get_float("SOLVER.WARMUP_FACTOR"),
                                     warmup_length, cfg.get_string("SOLVER.WARMUP_METHOD"),
                                     rescale);
}

std::unique_ptr<LRMultiplier> build_lr_scheduler(const config::CfgNode& cfg,
                                                 Optimizer& optimizer) {
  return std::make_unique<LRMultiplier>(optimizer, build_lr_multiplier(cfg),
                                        cfg.get_int("SOLVER.MAX_ITER"));
}

}  // namespace detkit::solver
