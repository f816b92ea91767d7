"""Detectron2's SEM_SEG_HEADS_REGISTRY and build_sem_seg_head (detectron2.modeling.meta_arch.
semantic_seg): semantic segmentation heads registered by name, built from
cfg.MODEL.SEM_SEG_HEAD.NAME as `head(cfg, input_shape)`."""
from ...utils.registry import Registry

__all__ = ["SEM_SEG_HEADS_REGISTRY", "build_sem_seg_head"]

SEM_SEG_HEADS_REGISTRY = Registry("SEM_SEG_HEADS")
SEM_SEG_HEADS_REGISTRY.__doc__ = """Semantic segmentation heads: modules built as
head(cfg, input_shape) where input_shape maps feature names to ShapeSpec; forward(features,
targets=None) gives (logits or None, dict of losses)."""


def build_sem_seg_head(cfg, input_shape):
    """The head cfg.MODEL.SEM_SEG_HEAD.NAME names, over features of input_shape."""
    return SEM_SEG_HEADS_REGISTRY.get(cfg.MODEL.SEM_SEG_HEAD.NAME)(cfg, input_shape)
