"""Detectron2's PeriodicCheckpointer and BestCheckpointer hooks, over a checkpointer object with
fvcore's Checkpointer methods (save(name, **extra), get_checkpoint_file()); fvcore itself is not
imported."""
import logging
import math
import operator
import os

from .train_loop import HookBase


class PeriodicCheckpointer(HookBase):
    """Saves "{file_prefix}_{iter:07d}" every `period` iterations and "{file_prefix}_final" at
    the last (max_iter: the trainer's unless given), each with {"iteration": iter}.
    max_to_keep: delete all but that many of the periodic ones (never the final one)."""

    def __init__(self, checkpointer, period, max_iter=None, max_to_keep=None,
                 file_prefix="model"):
        if int(period) < 1:
            raise ValueError(f"PeriodicCheckpointer: period must be >= 1, got {period}")
        if max_to_keep is not None and max_to_keep < 1:
            raise ValueError(f"PeriodicCheckpointer: max_to_keep must be >= 1, got {max_to_keep}")
        self.checkpointer = checkpointer
        self.period = int(period)
        self.max_iter = max_iter
        self.max_to_keep = max_to_keep
        self.file_prefix = file_prefix
        self.recent_checkpoints = []

    def step(self, iteration, **kwargs):
        """What the hook does after step `iteration`; kwargs go into the saved extra state."""
        iteration = int(iteration)
        extra = {"iteration": iteration, **kwargs}
        if (iteration + 1) % self.period == 0:
            self.checkpointer.save(f"{self.file_prefix}_{iteration:07d}", **extra)
            if self.max_to_keep is not None:
                self._forget_old(self.checkpointer.get_checkpoint_file())
        if self.max_iter is not None and iteration >= self.max_iter - 1:
            self.checkpointer.save(f"{self.file_prefix}_final", **extra)

    def _forget_old(self, newest):
        self.recent_checkpoints.append(newest)
        if len(self.recent_checkpoints) <= self.max_to_keep:
            return
        oldest = self.recent_checkpoints.pop(0)
        if oldest.endswith(f"{self.file_prefix}_final.pth"):
            return
        path_manager = getattr(self.checkpointer, "path_manager", None)
        if path_manager is not None:
            if path_manager.exists(oldest):
                path_manager.rm(oldest)
        elif os.path.exists(oldest):
            os.remove(oldest)

    def save(self, name, **kwargs):
        self.checkpointer.save(name, **kwargs)

    def before_train(self):
        self.max_iter = self.trainer.max_iter

    def after_step(self):
        self.step(self.trainer.iter)


class BestCheckpointer(HookBase):
    """Saves "{file_prefix}" (with {"iteration": the metric's}) whenever val_metric, read from
    the storage at the iterations EvalHook(eval_period) evaluates and at the end, beats the best
    so far (mode "max" or "min"). A NaN or infinite value is never the best."""

    def __init__(self, eval_period, checkpointer, val_metric, mode="max",
                 file_prefix="model_best"):
        if mode not in ("max", "min"):
            raise ValueError(f'BestCheckpointer: mode "{mode}" is unknown, use "max" or "min"')
        self._logger = logging.getLogger(__name__)
        self._period = eval_period
        self._val_metric = val_metric
        self._compare = operator.gt if mode == "max" else operator.lt
        self._checkpointer = checkpointer
        self._file_prefix = file_prefix
        self.best_metric = None
        self.best_iter = None

    def _update_best(self, value, iteration):
        if math.isnan(value) or math.isinf(value):
            return False
        self.best_metric, self.best_iter = value, iteration
        return True

    def _best_checking(self):
        latest = self.trainer.storage.latest().get(self._val_metric)
        if latest is None:
            self._logger.warning(f"BestCheckpointer: the storage has no '{self._val_metric}'; "
                                 "no checkpoint is kept by it")
            return
        value, iteration = latest
        if self.best_metric is None:
            if self._update_best(value, iteration):
                self._checkpointer.save(self._file_prefix, iteration=iteration)
                self._logger.info(f"{self._val_metric} {value:0.5f} at iteration {iteration}: "
                                  f"the first, saved as {self._file_prefix}")
        elif self._compare(value, self.best_metric):
            self._checkpointer.save(self._file_prefix, iteration=iteration)
            self._logger.info(f"{self._val_metric} {value:0.5f} at iteration {iteration} beats "
                              f"{self.best_metric:0.5f} (iteration {self.best_iter}): saved as "
                              f"{self._file_prefix}")
            self._update_best(value, iteration)
        else:
            self._logger.info(f"{self._val_metric} {value:0.5f} at iteration {iteration} does "
                              f"not beat {self.best_metric:0.5f} (iteration {self.best_iter}): "
                              f"not saved")

    def after_step(self):
        next_iter = self.trainer.iter + 1
        if self._period > 0 and next_iter % self._period == 0 \
                and next_iter != self.trainer.max_iter:
            self._best_checking()

    def after_train(self):
        if self.trainer.iter + 1 >= self.trainer.max_iter:
            self._best_checking()
