"""detkit.modeling from Python: the first of Detectron2's detectron2.modeling modules
(matcher). detkit's models themselves run in C++ (DefaultTrainer, DefaultPredictor)."""
from .matcher import Matcher

__all__ = ["Matcher"]
