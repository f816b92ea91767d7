"""detkit.engine: DefaultPredictor, DefaultTrainer, HookBase and launch as Detectron2's."""
from .defaults import DefaultPredictor, DefaultTrainer
from .hooks import HookBase
from .launch import DEFAULT_TIMEOUT, launch

__all__ = ["DEFAULT_TIMEOUT", "DefaultPredictor", "DefaultTrainer", "HookBase", "launch"]
