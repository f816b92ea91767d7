"""WarmupPolyLR: DeepLab's poly learning-rate schedule with Detectron2's warm-up."""
import math
from typing import List

import torch

from ...solver.lr_scheduler import LRScheduler, _warmup_factor_at

__all__ = ["WarmupPolyLR"]


class WarmupPolyLR(LRScheduler):
    """LR = base * warm-up factor * (1 - iter / max_iters) ** power. With constant_ending > 0,
    once the warm-up is over and the poly factor falls below constant_ending, LR = base *
    constant_ending. "epoch" in torch's names counts iterations here."""

    def __init__(self, optimizer: torch.optim.Optimizer, max_iters: int,
                 warmup_factor: float = 0.001, warmup_iters: int = 1000,
                 warmup_method: str = "linear", last_epoch: int = -1, power: float = 0.9,
                 constant_ending: float = 0.0):
        self.max_iters = max_iters
        self.warmup_factor = warmup_factor
        self.warmup_iters = warmup_iters
        self.warmup_method = warmup_method
        self.power = power
        self.constant_ending = constant_ending
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        warmup = _warmup_factor_at(self.warmup_method, self.last_epoch, self.warmup_iters,
                                   self.warmup_factor)
        poly = math.pow(1.0 - self.last_epoch / self.max_iters, self.power)
        if self.constant_ending > 0 and warmup == 1.0 and poly < self.constant_ending:
            return [base_lr * self.constant_ending for base_lr in self.base_lrs]
        return [base_lr * warmup * poly for base_lr in self.base_lrs]

    def _compute_values(self) -> List[float]:
        return self.get_lr()
