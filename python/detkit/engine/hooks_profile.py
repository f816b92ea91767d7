"""Detectron2's TorchProfiler, AutogradProfiler and TorchMemoryStats hooks."""
import logging
import os
import warnings

import torch

from ..utils import comm
from .train_loop import HookBase


class TorchProfiler(HookBase):
    """torch.profiler.profile around each step for which enable_predicate(trainer) is true;
    the trace goes to output_dir/log/profiler-tensorboard-iter{N} (save_tensorboard) or to
    output_dir/profiler-trace-iter{N}.json (a Chrome trace)."""

    def __init__(self, enable_predicate, output_dir, *, activities=None, save_tensorboard=True):
        self._enable_predicate = enable_predicate
        self._activities = activities
        self._output_dir = output_dir
        self._save_tensorboard = save_tensorboard
        self._profiler = None

    def before_step(self):
        if not self._enable_predicate(self.trainer):
            self._profiler = None
            return
        on_trace_ready = None
        if self._save_tensorboard:
            log_dir = os.path.join(self._output_dir, "log",
                                   f"profiler-tensorboard-iter{self.trainer.iter}")
            on_trace_ready = torch.profiler.tensorboard_trace_handler(
                log_dir, f"worker{comm.get_rank()}")
        self._profiler = torch.profiler.profile(
            activities=self._activities, on_trace_ready=on_trace_ready, record_shapes=True,
            profile_memory=True, with_stack=True, with_flops=True)
        self._profiler.__enter__()

    def after_step(self):
        if self._profiler is None:
            return
        self._profiler.__exit__(None, None, None)
        if not self._save_tensorboard:
            os.makedirs(self._output_dir, exist_ok=True)
            self._profiler.export_chrome_trace(os.path.join(
                self._output_dir, f"profiler-trace-iter{self.trainer.iter}.json"))


class AutogradProfiler(TorchProfiler):
    """Deprecated as in Detectron2 (use TorchProfiler): torch.autograd.profiler.profile around
    the enabled steps, a Chrome trace in output_dir/profiler-trace-iter{N}.json."""

    def __init__(self, enable_predicate, output_dir, *, use_cuda=True):
        warnings.warn("AutogradProfiler has been deprecated in favor of TorchProfiler.")
        super().__init__(enable_predicate, output_dir, save_tensorboard=False)
        self._use_cuda = use_cuda

    def before_step(self):
        if not self._enable_predicate(self.trainer):
            self._profiler = None
            return
        use_device = "cuda" if self._use_cuda and torch.cuda.is_available() else None
        self._profiler = torch.autograd.profiler.profile(use_device=use_device)
        self._profiler.__enter__()


class TorchMemoryStats(HookBase):
    """Logs CUDA memory statistics every `period` iterations and after the last, at most
    max_runs times (the full memory summary on the last); nothing without CUDA."""

    def __init__(self, period=20, max_runs=10):
        self._logger = logging.getLogger(__name__)
        self._period = period
        self._max_runs = max_runs
        self._runs = 0

    def after_step(self):
        if self._runs > self._max_runs:
            return
        it = self.trainer.iter
        if not ((it + 1) % self._period == 0 or it == self.trainer.max_iter - 1):
            return
        if not torch.cuda.is_available():
            return
        mb = 1024.0 * 1024.0
        self._logger.info(
            f" iter: {it}  max_reserved_mem: {torch.cuda.max_memory_reserved() / mb:.0f}MB "
            f" reserved_mem: {torch.cuda.memory_reserved() / mb:.0f}MB "
            f" max_allocated_mem: {torch.cuda.max_memory_allocated() / mb:.0f}MB "
            f" allocated_mem: {torch.cuda.memory_allocated() / mb:.0f}MB ")
        self._runs += 1
        if self._runs == self._max_runs:
            self._logger.info("\n" + torch.cuda.memory_summary())
        torch.cuda.reset_peak_memory_stats()
