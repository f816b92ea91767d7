#pragma once
// SGD and LR-scheduler state inside a checkpoint, in PyTorch's layout so Python's
// torch.load shows what Detectron2 saves: "optimizer": {"state": {i: {"momentum_buffer": T}},
// "param_groups": [{"lr", "momentum", "dampening", "weight_decay", "nesterov", "initial_lr",
// "params"}]}, "scheduler": {"base_lrs": [...], "last_epoch": N}, and with mixed precision
// "grad_scaler": {"scale", "growth_factor", "backoff_factor", "growth_interval",
// "_growth_tracker"} (PyTorch's GradScaler.state_dict()).
#include <ATen/core/ivalue.h>

#include "detkit/solver/grad_scaler.h"
#include "detkit/solver/lr_scheduler.h"
#include "detkit/solver/sgd_state.h"

namespace detkit::solver {

c10::IValue optimizer_state_to_ivalue(const SGDState& state);
SGDState optimizer_state_from_ivalue(const c10::IValue& value);
c10::IValue scheduler_state_to_ivalue(const LRSchedulerState& state);
LRSchedulerState scheduler_state_from_ivalue(const c10::IValue& value);
c10::IValue grad_scaler_state_to_ivalue(const GradScalerState& state);
GradScalerState grad_scaler_state_from_ivalue(const c10::IValue& value);

}  // namespace detkit::solver
