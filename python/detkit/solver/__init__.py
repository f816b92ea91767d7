"""detkit.solver: Detectron2's optimizer and LR schedules from a config (detectron2.solver), with
the parameter schedules of detkit.solver.param_scheduler (fvcore's, without fvcore)."""
from .build import build_lr_scheduler, build_optimizer, get_default_optimizer_params
from .lr_scheduler import (LRMultiplier, LRScheduler, WarmupCosineLR, WarmupMultiStepLR,
                           WarmupParamScheduler)

__all__ = ["LRMultiplier", "LRScheduler", "WarmupCosineLR", "WarmupMultiStepLR",
           "WarmupParamScheduler", "build_lr_scheduler", "build_optimizer",
           "get_default_optimizer_params"]
