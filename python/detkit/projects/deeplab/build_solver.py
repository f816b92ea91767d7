"""build_lr_scheduler of the DeepLab project: WarmupPolyLR for SOLVER.LR_SCHEDULER_NAME
"WarmupPolyLR", detkit.solver.build_lr_scheduler for every other name."""
import torch

from ...solver import LRScheduler
from ...solver import build_lr_scheduler as build_default_lr_scheduler
from .lr_scheduler import WarmupPolyLR

__all__ = ["build_lr_scheduler"]


def build_lr_scheduler(cfg, optimizer: torch.optim.Optimizer) -> LRScheduler:
    """The LR scheduler cfg.SOLVER describes (WarmupPolyLR needs add_deeplab_config's keys)."""
    solver = cfg.SOLVER
    if solver.LR_SCHEDULER_NAME != "WarmupPolyLR":
        return build_default_lr_scheduler(cfg, optimizer)
    return WarmupPolyLR(optimizer, solver.MAX_ITER, warmup_factor=solver.WARMUP_FACTOR,
                        warmup_iters=solver.WARMUP_ITERS, warmup_method=solver.WARMUP_METHOD,
                        power=solver.POLY_LR_POWER,
                        constant_ending=solver.POLY_LR_CONSTANT_ENDING)
