"""detkit.modeling.meta_arch: Detectron2's META_ARCH_REGISTRY and build_model."""
from .build import META_ARCH_REGISTRY, build_model

__all__ = ["META_ARCH_REGISTRY", "build_model"]
