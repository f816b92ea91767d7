"""Detectron2's LR schedules (detectron2.solver.lr_scheduler): WarmupParamScheduler adds a
warm-up to a parameter schedule, LRMultiplier makes a schedule of multipliers a torch LR
scheduler (each group's LR: its initial LR times the multiplier at iteration / max_iter).
WarmupMultiStepLR and WarmupCosineLR are the older closed-form schedulers Detectron2 keeps."""
import logging
import math
from bisect import bisect_right
from typing import List

import torch
from torch.optim.lr_scheduler import LRScheduler

from .param_scheduler import (CompositeParamScheduler, ConstantParamScheduler,
                              LinearParamScheduler)

__all__ = ["LRMultiplier", "LRScheduler", "WarmupCosineLR", "WarmupMultiStepLR",
           "WarmupParamScheduler"]

logger = logging.getLogger(__name__)


class WarmupParamScheduler(CompositeParamScheduler):
    """scheduler with a warm-up over the first warmup_length (a fraction of training) starting at
    warmup_factor * scheduler(0): "linear" rises to the schedule's value where the warm-up ends
    (to scheduler(0) with rescale_interval), "constant" stays there. rescale_interval: the
    schedule runs over the rest of training as if it were all of it (else it keeps its own
    timing and its first part is hidden under the warm-up)."""

    def __init__(self, scheduler, warmup_factor: float, warmup_length: float,
                 warmup_method: str = "linear", rescale_interval: bool = False):
        if not callable(scheduler):
            raise ValueError(f"WarmupParamScheduler(scheduler=) must be a schedule called with "
                             f"the fraction of training done, got {scheduler!r}")
        start_value = warmup_factor * scheduler(0.0)
        if warmup_method == "constant":
            warmup = ConstantParamScheduler(start_value)
        elif warmup_method == "linear":
            end_value = scheduler(0.0 if rescale_interval else warmup_length)
            warmup = LinearParamScheduler(start_value, end_value)
        else:
            raise ValueError(f"Unknown warmup method: {warmup_method!r} (SOLVER.WARMUP_METHOD: "
                             "'linear' or 'constant')")
        super().__init__([warmup, scheduler], lengths=[warmup_length, 1 - warmup_length],
                         interval_scaling=["rescaled", "rescaled" if rescale_interval else "fixed"])


class LRMultiplier(LRScheduler):
    """Each step, every param group's LR becomes its initial LR times multiplier(last_iter /
    max_iter). multiplier: a ParamScheduler of detkit.solver.param_scheduler or fvcore's, or any
    callable from the fraction of training done to a factor."""

    def __init__(self, optimizer: torch.optim.Optimizer, multiplier, max_iter: int,
                 last_iter: int = -1):
        if not callable(multiplier):
            raise ValueError(f"LRMultiplier(multiplier=) must be a ParamScheduler (a callable "
                             f"from the fraction of training done), got {multiplier!r}")
        if max_iter <= 0:
            raise ValueError(f"LRMultiplier(max_iter=) must be positive, got {max_iter}")
        self._multiplier = multiplier
        self._max_iter = max_iter
        super().__init__(optimizer, last_epoch=last_iter)

    def state_dict(self):
        return {"base_lrs": self.base_lrs, "last_epoch": self.last_epoch}

    def get_lr(self) -> List[float]:
        factor = self._multiplier(self.last_epoch / self._max_iter)
        return [base_lr * factor for base_lr in self.base_lrs]


def _warmup_factor_at(method: str, it: int, warmup_iters: int, warmup_factor: float) -> float:
    """The warm-up multiplier at iteration it: 1 from warmup_iters on."""
    if it >= warmup_iters:
        return 1.0
    if method == "constant":
        return warmup_factor
    if method == "linear":
        alpha = it / warmup_iters
        return warmup_factor + (1 - warmup_factor) * alpha
    raise ValueError(f"Unknown warmup method: {method!r} ('linear' or 'constant')")


class WarmupMultiStepLR(LRScheduler):
    """LR = base * warm-up factor * gamma^(milestones passed). Detectron2 keeps it deprecated in
    favour of LRMultiplier with a MultiStepParamScheduler."""

    def __init__(self, optimizer, milestones: List[int], gamma: float = 0.1,
                 warmup_factor: float = 0.001, warmup_iters: int = 1000,
                 warmup_method: str = "linear", last_epoch: int = -1):
        logger.warning("WarmupMultiStepLR is deprecated! Use LRMultiplier with a "
                       "MultiStepParamScheduler instead!")
        if list(milestones) != sorted(milestones):
            raise ValueError(f"WarmupMultiStepLR: milestones should be a list of increasing "
                             f"integers. Got {milestones}")
        self.milestones = list(milestones)
        self.gamma = gamma
        self.warmup_factor = warmup_factor
        self.warmup_iters = warmup_iters
        self.warmup_method = warmup_method
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        factor = _warmup_factor_at(self.warmup_method, self.last_epoch, self.warmup_iters,
                                   self.warmup_factor)
        decay = self.gamma ** bisect_right(self.milestones, self.last_epoch)
        return [base_lr * factor * decay for base_lr in self.base_lrs]

    def _compute_values(self) -> List[float]:
        return self.get_lr()


class WarmupCosineLR(LRScheduler):
    """LR = base * warm-up factor * (1 + cos(pi * iter / max_iters)) / 2. Deprecated in Detectron2
    in favour of LRMultiplier with a CosineParamScheduler."""

    def __init__(self, optimizer, max_iters: int, warmup_factor: float = 0.001,
                 warmup_iters: int = 1000, warmup_method: str = "linear", last_epoch: int = -1):
        logger.warning("WarmupCosineLR is deprecated! Use LRMultiplier with a "
                       "CosineParamScheduler instead!")
        self.max_iters = max_iters
        self.warmup_factor = warmup_factor
        self.warmup_iters = warmup_iters
        self.warmup_method = warmup_method
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        factor = _warmup_factor_at(self.warmup_method, self.last_epoch, self.warmup_iters,
                                   self.warmup_factor)
        cosine = (1.0 + math.cos(math.pi * self.last_epoch / self.max_iters)) / 2
        return [base_lr * factor * cosine for base_lr in self.base_lrs]

    def _compute_values(self) -> List[float]:
        return self.get_lr()
