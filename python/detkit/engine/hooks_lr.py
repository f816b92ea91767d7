"""Detectron2's LRScheduler hook: steps a torch LR scheduler (or a ParamScheduler of multipliers
made an LRMultiplier) after every iteration and puts "lr" into the storage."""
import logging
from collections import Counter

from ..solver.lr_scheduler import LRMultiplier
from ..solver.lr_scheduler import LRScheduler as _TorchLRScheduler
from ..solver.param_scheduler import ParamScheduler
from .train_loop import HookBase


class LRScheduler(HookBase):
    """optimizer, scheduler: the trainer's (trainer.optimizer, trainer.scheduler) unless given.
    A ParamScheduler is taken as multipliers of the optimizer's base LRs over max_iter. Each
    step puts the LR of the "best" param group (see get_best_param_group_id), then steps. Its
    state_dict is the torch scheduler's, so a checkpoint restores the schedule."""

    def __init__(self, optimizer=None, scheduler=None):
        self._optimizer = optimizer
        self._scheduler = scheduler

    def before_train(self):
        self._optimizer = self._optimizer or self.trainer.optimizer
        if isinstance(self.scheduler, ParamScheduler):
            self._scheduler = LRMultiplier(self._optimizer, self.scheduler,
                                           self.trainer.max_iter,
                                           last_iter=self.trainer.iter - 1)
        self._best_param_group_id = LRScheduler.get_best_param_group_id(self._optimizer)

    @staticmethod
    def get_best_param_group_id(optimizer):
        """The group whose LR is reported: with one parameter per group (per-parameter
        options), the first group with the most common LR; else the first largest group."""
        groups = optimizer.param_groups
        largest = max(len(g["params"]) for g in groups)
        if largest == 1:
            common_lr = Counter(g["lr"] for g in groups).most_common()[0][0]
            return next(i for i, g in enumerate(groups) if g["lr"] == common_lr)
        return next(i for i, g in enumerate(groups) if len(g["params"]) == largest)

    def after_step(self):
        lr = self._optimizer.param_groups[self._best_param_group_id]["lr"]
        self.trainer.storage.put_scalar("lr", lr, smoothing_hint=False)
        self.scheduler.step()

    @property
    def scheduler(self):
        return self._scheduler or self.trainer.scheduler

    def state_dict(self):
        if isinstance(self.scheduler, _TorchLRScheduler):
            return self.scheduler.state_dict()
        return {}

    def load_state_dict(self, state_dict):
        if isinstance(self.scheduler, _TorchLRScheduler):
            logging.getLogger(__name__).info("Loading scheduler from state_dict ...")
            self.scheduler.load_state_dict(state_dict)
