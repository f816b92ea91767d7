#pragma once
// Detectron2's DefaultTrainer.auto_scale_workers: adapts a config written for
// SOLVER.REFERENCE_WORLD_SIZE workers to `num_workers`, keeping the per-worker batch size.
#include <cstdint>

#include "detkit/config/cfg_node.h"

namespace detkit::solver {

/// Unchanged when REFERENCE_WORLD_SIZE is 0 or equals num_workers. Otherwise, with
/// scale = num_workers / REFERENCE_WORLD_SIZE: IMS_PER_BATCH and BASE_LR times scale;
/// MAX_ITER, WARMUP_ITERS, STEPS, TEST.EVAL_PERIOD and CHECKPOINT_PERIOD divided by it
/// (integers rounded half to even, as Python's round); REFERENCE_WORLD_SIZE = num_workers.
/// The result is frozen when `cfg` is. Throws detkit::Error when IMS_PER_BATCH is not divisible
/// by REFERENCE_WORLD_SIZE.
config::CfgNode auto_scale_workers(const config::CfgNode& cfg, int64_t num_workers);

}  // namespace detkit::solver
