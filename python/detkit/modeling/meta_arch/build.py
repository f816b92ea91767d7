"""Detectron2's META_ARCH_REGISTRY and build_model(cfg). detkit's built-in models
(GeneralizedRCNN, RetinaNet, ProposalNetwork, SemanticSegmentor, PanopticFPN: native.py) are
registered in it as nn.Modules over the C++ model; architectures registered from Python are
built as Detectron2 builds them."""
import torch

from ...utils.registry import Registry

__all__ = ["META_ARCH_REGISTRY", "build_model"]

META_ARCH_REGISTRY = Registry("META_ARCH")
META_ARCH_REGISTRY.__doc__ = """Meta-architectures: nn.Module classes called as cls(cfg)."""

# what detkit's C++ engine builds itself (registered by native.py)
BUILTIN_META_ARCHITECTURES = ("GeneralizedRCNN", "RetinaNet", "SemanticSegmentor", "PanopticFPN",
                              "ProposalNetwork")


def build_model(cfg):
    """META_ARCH_REGISTRY.get(cfg.MODEL.META_ARCHITECTURE)(cfg), moved to cfg.MODEL.DEVICE; an
    unregistered name is the registry's KeyError listing the registered ones."""
    model = META_ARCH_REGISTRY.get(cfg.MODEL.META_ARCHITECTURE)(cfg)
    model.to(torch.device(cfg.MODEL.DEVICE))
    return model
