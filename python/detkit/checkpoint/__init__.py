"""detkit.checkpoint: Detectron2's checkpoint module. Checkpointer (fvcore's API),
DetectionCheckpointer (Detectron2 / Caffe2 / pycls files, matching heuristics over detkit's C++)
and PeriodicCheckpointer (detkit.engine's hook, which has fvcore's step / save)."""
from ..engine.hooks_checkpoint import PeriodicCheckpointer
from .checkpointer import Checkpointer
from .detection_checkpoint import DetectionCheckpointer

__all__ = ["Checkpointer", "DetectionCheckpointer", "PeriodicCheckpointer"]
