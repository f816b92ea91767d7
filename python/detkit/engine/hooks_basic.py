"""Detectron2's CallbackHook, IterationTimer and PeriodicWriter hooks."""
import datetime
import logging
import time

from ..utils.events import EventWriter
from .train_loop import HookBase


class CallbackHook(HookBase):
    """A hook from functions, each called with the trainer: before_train, after_train,
    before_step, after_step (keyword-only; any may be None)."""

    def __init__(self, *, before_train=None, after_train=None, before_step=None,
                 after_step=None):
        self._callbacks = {"before_train": before_train, "after_train": after_train,
                           "before_step": before_step, "after_step": after_step}

    def _call(self, which):
        callback = self._callbacks.get(which)
        if callback:
            callback(self.trainer)

    def before_train(self):
        self._call("before_train")

    def after_train(self):
        self._call("after_train")
        self._callbacks = {}  # drop the functions (and what they hold) once training ends

    def before_step(self):
        self._call("before_step")

    def after_step(self):
        self._call("after_step")


class _Timer:
    """Seconds elapsed while running, with pause and resume (fvcore's Timer, as far as used)."""

    def __init__(self):
        self.reset()

    def reset(self):
        self._start = time.perf_counter()
        self._paused_at = None
        self._paused_total = 0.0

    def pause(self):
        if self._paused_at is None:
            self._paused_at = time.perf_counter()

    def resume(self):
        if self._paused_at is not None:
            self._paused_total += time.perf_counter() - self._paused_at
            self._paused_at = None

    def seconds(self):
        end = self._paused_at if self._paused_at is not None else time.perf_counter()
        return end - self._start - self._paused_total


class IterationTimer(HookBase):
    """Puts "time" (seconds between this hook's before_step and after_step) each iteration
    after the first warmup_iter, and logs the training speed when training ends. Register it
    first so that the other hooks' before_step is not timed."""

    def __init__(self, warmup_iter=3):
        self._warmup_iter = warmup_iter
        self._step_timer = _Timer()
        self._start_time = time.perf_counter()
        self._total_timer = _Timer()

    def before_train(self):
        self._start_time = time.perf_counter()
        self._total_timer.reset()
        self._total_timer.pause()

    def after_train(self):
        logger = logging.getLogger(__name__)
        total_time = time.perf_counter() - self._start_time
        steps_time = self._total_timer.seconds()
        num_iter = self.trainer.storage.iter + 1 - self.trainer.start_iter - self._warmup_iter
        if num_iter > 0 and steps_time > 0:
            logger.info("Overall training speed: {} iterations in {} ({:.4f} s / it)".format(
                num_iter, datetime.timedelta(seconds=int(steps_time)), steps_time / num_iter))
        logger.info("Total training time: {} ({} on hooks)".format(
            datetime.timedelta(seconds=int(total_time)),
            datetime.timedelta(seconds=int(total_time - steps_time))))

    def before_step(self):
        self._step_timer.reset()
        self._total_timer.resume()

    def after_step(self):
        done = self.trainer.storage.iter - self.trainer.start_iter + 1
        if done >= self._warmup_iter:
            self.trainer.storage.put_scalars(time=self._step_timer.seconds())
        else:  # still warming up: the overall speed counts from here
            self._start_time = time.perf_counter()
            self._total_timer.reset()
        self._total_timer.pause()


class PeriodicWriter(HookBase):
    """Calls each writer's write() every `period` iterations and after the last one; when
    training ends, write() and close()."""

    def __init__(self, writers, period=20):
        for w in writers:
            if not isinstance(w, EventWriter):
                raise TypeError(f"PeriodicWriter: {w!r} is not an EventWriter")
        self._writers = writers
        self._period = period

    def after_step(self):
        it = self.trainer.iter
        if (it + 1) % self._period == 0 or it == self.trainer.max_iter - 1:
            for writer in self._writers:
                writer.write()

    def after_train(self):
        for writer in self._writers:
            writer.write()
            writer.close()
