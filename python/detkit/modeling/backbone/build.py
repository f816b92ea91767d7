"""BACKBONE_REGISTRY and build_backbone (Detectron2's): a registered builder
`(cfg, input_shape) -> Backbone` chosen by cfg.MODEL.BACKBONE.NAME."""
from ...layers import ShapeSpec
from ...utils.registry import Registry
from .backbone import Backbone

__all__ = ["BACKBONE_REGISTRY", "build_backbone"]

BACKBONE_REGISTRY = Registry("BACKBONE")
BACKBONE_REGISTRY.__doc__ = """Builders of backbones: callables (cfg, ShapeSpec of the input)
returning a Backbone, looked up by cfg.MODEL.BACKBONE.NAME."""


def build_backbone(cfg, input_shape=None):
    """The Backbone cfg.MODEL.BACKBONE.NAME builds; the input has len(cfg.MODEL.PIXEL_MEAN)
    channels unless input_shape says otherwise."""
    if input_shape is None:
        input_shape = ShapeSpec(channels=len(cfg.MODEL.PIXEL_MEAN))
    builder = BACKBONE_REGISTRY.get(cfg.MODEL.BACKBONE.NAME)
    backbone = builder(cfg, input_shape)
    assert isinstance(backbone, Backbone), \
        f"{cfg.MODEL.BACKBONE.NAME} built a {type(backbone).__name__}, not a Backbone"
    return backbone
