"""detkit.modeling from Python: the first of Detectron2's detectron2.modeling modules (matcher,
box_regression). detkit's models themselves run in C++ (DefaultTrainer, DefaultPredictor)."""
from .box_regression import Box2BoxTransform, Box2BoxTransformLinear, Box2BoxTransformRotated
from .matcher import Matcher
from .meta_arch import META_ARCH_REGISTRY, build_model

__all__ = ["Box2BoxTransform", "Box2BoxTransformLinear", "Box2BoxTransformRotated", "Matcher",
           "META_ARCH_REGISTRY", "build_model"]
