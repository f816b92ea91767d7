#pragma once
// Mixed precision as SOLVER.AMP.* asks for it (Detectron2's ENABLED, plus detkit's PRECISION,
// OPT_LEVEL and LOSS_SCALE): the forward pass and the losses under autocast in `precision`, fp32
// weights and optimizer (O1: Detectron2's AMPTrainer), and the loss scaled by a GradScaler.
#include <c10/core/ScalarType.h>

#include <optional>

#include "detkit/config/cfg_node.h"
#include "detkit/solver/grad_scaler.h"

namespace detkit::solver {

struct AmpOptions {
  bool enabled = false;
  c10::ScalarType precision = c10::kBFloat16;
  GradScalerOptions loss_scale;  // dynamic, or static at init_scale
};

/// Reads SOLVER.AMP.*, checking every key whether or not ENABLED is set:
///   PRECISION  bfloat16 (default) | float16 (refused where the device has no float16 autocast,
///              as on CPU: named with the key)
///   OPT_LEVEL  O1 (default): autocast with fp32 weights. O2 (reduced-precision weights with fp32
///              master copies) is refused with the key named: not implemented yet.
///   LOSS_SCALE dynamic (default: PyTorch's GradScaler, 2^16, x2 after 2000 clean steps, x0.5 on
///              overflow) | a positive number (static, e.g. 64).
/// Anything else is a detkit::Error naming the key, its value and what it may be.
AmpOptions amp_options_from_config(const config::CfgNode& cfg);

}  // namespace detkit::solver
