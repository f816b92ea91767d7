"""detkit.engine: Detectron2's training loop (TrainerBase, SimpleTrainer, AMPTrainer, hooks),
job helpers (default_setup, default_argument_parser, default_writers, launch), and
DefaultPredictor / DefaultTrainer over detkit's C++ engine."""
from . import hooks
from .defaults import DefaultPredictor, DefaultTrainer
from .hooks import HookBase
from .launch import DEFAULT_TIMEOUT, launch
from .setup import default_argument_parser, default_setup, default_writers
from .simple_trainer import AMPTrainer, SimpleTrainer
from .train_loop import TrainerBase

__all__ = ["AMPTrainer", "DEFAULT_TIMEOUT", "DefaultPredictor", "DefaultTrainer", "HookBase",
           "SimpleTrainer", "TrainerBase", "default_argument_parser", "default_setup",
           "default_writers", "hooks", "launch"]
