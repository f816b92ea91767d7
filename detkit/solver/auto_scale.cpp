#include "detkit/solver/auto_scale.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <string>
#include <vector>

#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

// Python's int(round(x)): nearest integer, ties to even.
int64_t round_half_even(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

}  // namespace

config::CfgNode auto_scale_workers(const config::CfgNode& cfg, int64_t num_workers) {
  const int64_t old_world_size = cfg.get_int("SOLVER.REFERENCE_WORLD_SIZE");
  if (old_world_size == 0 || old_world_size == num_workers) return cfg;
  const int64_t ims_per_batch = cfg.get_int("SOLVER.IMS_PER_BATCH");
  if (ims_per_batch % old_world_size != 0) {
    throw Error("Invalid SOLVER.REFERENCE_WORLD_SIZE in config: SOLVER.IMS_PER_BATCH (" +
                std::to_string(ims_per_batch) + ") is not divisible by it (" +
                std::to_string(old_world_size) + ")");
  }
  const double scale = double(num_workers) / double(old_world_size);
  config::CfgNode out(cfg);
  out.defrost();  // the copy only; frozen again below when `cfg` was
  const int64_t bs = round_half_even(double(ims_per_batch) * scale);
  const double lr = cfg.get_float("SOLVER.BASE_LR") * scale;
  const int64_t max_iter = round_half_even(double(cfg.get_int("SOLVER.MAX_ITER")) / scale);
  const int64_t warmup = round_half_even(double(cfg.get_int("SOLVER.WARMUP_ITERS")) / scale);
  std::vector<config::CfgValue> steps;
  for (int64_t s : cfg.get_int_list("SOLVER.STEPS")) {
    steps.emplace_back(round_half_even(double(s) / scale));
  }
  out.set("SOLVER.IMS_PER_BATCH", bs);
  out.set("SOLVER.BASE_LR", lr);
  out.set("SOLVER.MAX_ITER", max_iter);
  out.set("SOLVER.WARMUP_ITERS", warmup);
  out.set("SOLVER.STEPS", config::CfgValue::list(std::move(steps)));
  out.set("TEST.EVAL_PERIOD", round_half_even(double(cfg.get_int("TEST.EVAL_PERIOD")) / scale));
  out.set("SOLVER.CHECKPOINT_PERIOD",
          round_half_even(double(cfg.get_int("SOLVER.CHECKPOINT_PERIOD")) / scale));
  out.set("SOLVER.REFERENCE_WORLD_SIZE", num_workers);
  if (cfg.is_frozen()) out.freeze();
  spdlog::info(
      "Auto-scaling the config to batch_size={}, learning_rate={}, max_iter={}, warmup={}.", bs, lr,
      max_iter, warmup);
  return out;
}

}  // namespace detkit::solver
