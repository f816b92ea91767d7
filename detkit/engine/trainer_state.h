#pragma once
// The optimizer and LR-scheduler state inside a checkpoint, in PyTorch's layout so Python's
// torch.load shows what Detectron2 saves: "optimizer": {"state": {i: {"momentum_buffer": T}},
// "param_groups": [{"lr", "momentum", "dampening", "weight_decay", "nesterov", "initial_lr",
// "params"}]}, "scheduler": {"base_lrs": [...], "last_epoch": N}.
#include "detkit/checkpoint/checkpointer.h"
#include "detkit/solver/lr_scheduler.h"
#include "detkit/solver/sgd_state.h"

namespace detkit::engine {

c10::IValue optimizer_state_to_ivalue(const solver::SGDState& state);
solver::SGDState optimizer_state_from_ivalue(const c10::IValue& value);
c10::IValue scheduler_state_to_ivalue(const solver::LRSchedulerState& state);
solver::LRSchedulerState scheduler_state_from_ivalue(const c10::IValue& value);

}  // namespace detkit::engine
