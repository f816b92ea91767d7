"""detkit.engine: DefaultPredictor, DefaultTrainer and HookBase as Detectron2's."""
from .defaults import DefaultPredictor, DefaultTrainer
from .hooks import HookBase

__all__ = ["DefaultPredictor", "DefaultTrainer", "HookBase"]
