"""Detectron2's detectron2.engine.hooks: HookBase and the common hooks, each defined in its own
module (hooks_basic, hooks_checkpoint, hooks_lr, hooks_eval, precise_bn, hooks_profile)."""
from .hooks_basic import CallbackHook, IterationTimer, PeriodicWriter
from .hooks_checkpoint import BestCheckpointer, PeriodicCheckpointer
from .hooks_eval import EvalHook
from .hooks_lr import LRScheduler
from .hooks_profile import AutogradProfiler, TorchMemoryStats, TorchProfiler
from .precise_bn import PreciseBN
from .train_loop import HookBase

__all__ = ["AutogradProfiler", "BestCheckpointer", "CallbackHook", "EvalHook", "HookBase",
           "IterationTimer", "LRScheduler", "PeriodicCheckpointer", "PeriodicWriter",
           "PreciseBN", "TorchMemoryStats", "TorchProfiler"]
