#pragma once
// Mixed precision as SOLVER.AMP.* asks for it (Detectron2's ENABLED, plus detkit's PRECISION,
// OPT_LEVEL and LOSS_SCALE): the forward pass and the losses under autocast in `precision`, the
// loss scaled by a GradScaler, and either fp32 weights (O1: Detectron2's AMPTrainer) or weights in
// `precision` updated through fp32 master copies (O2: the seed port's; solver/master_weights.h).
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

#include "detkit/config/cfg_node.h"
#include "detkit/solver/grad_scaler.h"
#include "detkit/utils/cpu_features.h"

namespace detkit::solver {

enum class OptLevel { O1, O2 };

struct AmpOptions {
  bool enabled = false;
  OptLevel opt_level = OptLevel::O1;
  c10::ScalarType precision = c10::kBFloat16;
  GradScalerOptions loss_scale;  // dynamic, or static at init_scale
  c10::DeviceType device = c10::DeviceType::CPU;  // MODEL.DEVICE's type: whose autocast runs
};

/// Reads SOLVER.AMP.*, checking every key whether or not ENABLED is set:
///   PRECISION  bfloat16 (default) | float16 (refused where the device has no float16 autocast,
///              as on CPU: named with the key)
///   OPT_LEVEL  O1 (default): autocast with fp32 weights. O2: autocast with the trained weights in
///              PRECISION except those of normalisation layers, and fp32 master copies of them
///              in the optimizer.
///   LOSS_SCALE dynamic (default: PyTorch's GradScaler, 2^16, x2 after 2000 clean steps, x0.5 on
///              overflow) | a positive number (static, e.g. 64).
/// Anything else is a detkit::Error naming the key, its value and what it may be.
/// With ENABLED on a CPU device and bfloat16, it also says once per process how bfloat16 runs on
/// this CPU (see bfloat16_on_cpu_note): a warning where it is slower than float32.
AmpOptions amp_options_from_config(const config::CfgNode& cfg);

/// What bfloat16 autocast does to speed on a CPU with `cpu`'s features, for the log, and whether
/// it is slower than float32 there (a warning), as measured (docs/BENCHMARKS.md): faster on AMX's
/// tile units and on AMD's avx512_bf16 (Zen 4); slower on Intel's avx512_bf16 without AMX; not
/// measured without either.
struct Bfloat16Note {
  bool slower = false;
  std::string text;
};
Bfloat16Note bfloat16_on_cpu_note(const CpuFeatures& cpu);

}  // namespace detkit::solver
